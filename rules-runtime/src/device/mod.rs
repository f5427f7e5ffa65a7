//! The device layer (private): raw driver calls and kernel launches ([`kernels`], and [`region`] for boxes) and the one
//! owned cache of per-context resources ([`pool`]). Nothing here checks user input: [`crate::ops`]
//! checks everything first, then calls in here with addresses it has validated.

pub(crate) mod check;
pub(crate) mod kernels;
pub(crate) mod nccl;
pub(crate) mod peer;
pub(crate) mod pipeline;
pub(crate) mod pool;
pub(crate) mod probe;
pub(crate) mod region;
