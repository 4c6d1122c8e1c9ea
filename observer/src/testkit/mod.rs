//! Test fixtures shared by the unit tests and the integration tests
//! (`tests/integration/`): synthetic BTF blobs ([`btf`]) and
//! [`FlowSample`](observer_common::FlowSample)s built field by field
//! ([`sample`]), and an async test's runtime ([`runtime`]). Compiled for the crate's own tests and with the `testkit`
//! feature (which the crate's dev-dependency on itself turns on for the
//! integration tests); never part of the program.

pub mod btf;
pub mod runtime;
pub mod sample;
