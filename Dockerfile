# The workspacemounts image for those who build with docker or podman: the
# files, user and labels of `make image` (ko, hack/image/build.sh), which
# needs neither; the binary is at /workspacemounts, which make image links to
# ko's /ko-app/workspacemounts. Nothing is pulled (FROM scratch); the binaries come from the
# build context, so build them first:
#
#   make image-binaries     # _output/bin/linux_amd64 and linux_arm64
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(hack/version.sh) --build-arg REVISION=$(git rev-parse HEAD) \
#     -t ghcr.io/workspacemounts/workspacemounts:v0.1.0 .
#   podman build --platform linux/amd64 ... (the same)
FROM scratch
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=v0.0.0-dev
ARG REVISION=unknown
COPY hack/image/rootfs/etc/passwd hack/image/rootfs/etc/group /etc/
COPY --chmod=0755 _output/bin/${TARGETOS}_${TARGETARCH}/workspacemounts /workspacemounts
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Another difference from make image: no /tmp directory (make image's is
# 1777). FROM scratch has no RUN to make it, and podman 4.3 (buildah 1.28)
# writes neither an empty directory's COPY --chmod nor a WORKDIR into a layer.
# The manifests and the chart mount an emptyDir at /tmp (--cert-dir), which
# the runtime creates.
WORKDIR /
USER 65532:65532
LABEL org.opencontainers.image.source="https://github.com/workspacemounts/workspacemounts" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.title="workspacemounts" \
      org.opencontainers.image.description="A kcp plugin that shows, for every mounted workspace, whether its mount is ready, and serves them as a read-only API."
ENTRYPOINT ["/workspacemounts"]
