//! Where a buffer's bytes are: which memory ([`MemoryKind`]), which addresses ([`Region`]), and how
//! two ranges relate ([`Overlap`]). Plain descriptions on the ground floor, so that errors can
//! name them; public as `rules_runtime::memory::{MemoryKind, Region, Overlap}`.

/// Where a buffer's bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Ordinary (pageable) host memory: `[T]`, `Vec<T>`.
    Host,
    /// Page-locked host memory, mapped into the device's address space.
    Pinned,
    /// Device memory.
    Device,
    /// Unified (managed) memory, reachable from host and device.
    Unified,
    /// A CUDA array (opaque layout; reserved for pitched/array copies).
    Array,
}

impl MemoryKind {
    /// Whether host code can read and write this memory directly.
    pub const fn host_accessible(self) -> bool {
        matches!(
            self,
            MemoryKind::Host | MemoryKind::Pinned | MemoryKind::Unified
        )
    }

    /// Whether kernels can read and write this memory directly.
    pub const fn device_accessible(self) -> bool {
        matches!(
            self,
            MemoryKind::Device | MemoryKind::Pinned | MemoryKind::Unified
        )
    }
}

/// A byte range in the (unified virtual) address space, for alias checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl Region {
    /// The region of `len` elements of `T` at address `addr`.
    pub fn of<T>(addr: u64, len: usize) -> Self {
        let bytes = (len as u64).saturating_mul(size_of::<T>() as u64);
        Region {
            start: addr,
            end: addr.saturating_add(bytes),
        }
    }

    /// How two regions relate: disjoint, the same range, or partially overlapping.
    pub fn relation(self, other: Region) -> Overlap {
        if self.start == self.end || other.start == other.end {
            return Overlap::Disjoint;
        }
        if self == other {
            Overlap::Same
        } else if self.start < other.end && other.start < self.end {
            Overlap::Partial
        } else {
            Overlap::Disjoint
        }
    }
}

/// The relation between a copy's source and destination ranges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// No byte in common (or one of them is empty).
    Disjoint,
    /// Exactly the same bytes: a self-copy, whose derivative is the identity.
    Same,
    /// Some bytes in common: refused.
    Partial,
}
