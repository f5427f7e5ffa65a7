//! The device operations (private): raw driver calls and kernel launches on checked views
//! ([`kernels`], and [`region`] for boxes), the checked mode's compare ([`check`]), the pinned
//! pipelines, peer access and NCCL's scratch. They take their kernels and buffers from the
//! context cache (`crate::driver::pool`). Nothing here checks user input: `crate::ops` checks
//! everything first, then calls in here with addresses it has validated.

pub(crate) mod array;
pub(crate) mod check;
pub(crate) mod kernels;
pub(crate) mod nccl;
pub(crate) mod peer;
pub(crate) mod pipeline;
pub(crate) mod region;
