/*
Copyright 2026 The workspacemounts Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package authorization

import (
	"errors"
	"fmt"
	"time"
)

// ReviewOptions bound what the reviews cost, whatever the requests.
type ReviewOptions struct {
	// AllowTTL and DenyTTL are how long an answer is fresh.
	AllowTTL, DenyTTL time.Duration
	// StaleGrace is how long past its TTL an answer may still serve while it is asked again, when kcp does not
	// answer within StaleWait.
	StaleGrace, StaleWait time.Duration
	// CacheSize bounds the answers remembered, one per user, cluster and verb, least recently used first out.
	CacheSize int
	// Concurrency bounds the reviews under way towards kcp, PerUserConcurrency those of one [FairnessKey].
	Concurrency, PerUserConcurrency int
	// Timeout bounds one review, waiting for its turn included.
	Timeout time.Duration
	// NewSubjectsPerTenantQPS and NewSubjectsPerTenantBurst bound the rate of subjects not seen lately, per tenant.
	NewSubjectsPerTenantQPS   float64
	NewSubjectsPerTenantBurst int
}

// DefaultReviewOptions are the defaults of the flags.
func DefaultReviewOptions() ReviewOptions {
	return ReviewOptions{
		AllowTTL:           time.Minute,
		DenyTTL:            30 * time.Second,
		StaleGrace:         5 * time.Minute,
		StaleWait:          100 * time.Millisecond,
		CacheSize:          10000,
		Concurrency:        16,
		PerUserConcurrency: 2,
		Timeout:            10 * time.Second,

		NewSubjectsPerTenantQPS:   5,
		NewSubjectsPerTenantBurst: 50,
	}
}

// Validate tells what is wrong with the options.
func (o ReviewOptions) Validate() error {
	var errs []error
	if o.AllowTTL < 0 || o.DenyTTL < 0 || o.StaleGrace < 0 || o.StaleWait < 0 {
		errs = append(errs, errors.New("the authorization cache TTLs and grace must not be negative"))
	}
	if o.CacheSize < 1 {
		errs = append(errs, fmt.Errorf("--authorization-cache-size must be at least 1, not %d", o.CacheSize))
	}
	if o.Concurrency < 1 || o.PerUserConcurrency < 1 {
		errs = append(errs, errors.New("--authorization-concurrency and --authorization-per-user-concurrency must be at least 1"))
	}
	if o.Timeout <= 0 {
		errs = append(errs, errors.New("--authorization-timeout must be positive"))
	}
	if o.NewSubjectsPerTenantQPS <= 0 || o.NewSubjectsPerTenantBurst < 1 {
		errs = append(errs, errors.New("--authorization-new-subjects-per-tenant-qps and --authorization-new-subjects-per-tenant-burst must be positive"))
	}
	return errors.Join(errs...)
}
