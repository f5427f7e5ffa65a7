//! Memory kinds and the shadow-memory trait.
//!
//! A shadow lives in some kind of memory. [`ShadowMemory`] says which, how long it is, and
//! hands out an [`Access`] that the operations in [`crate::ops`] dispatch on. One file per kind:
//! [`host`] (pageable `[T]`, `Vec<T>`, arrays) and [`raw`] (raw pointers with a declared kind).

pub mod host;
pub mod raw;

use crate::element::Differentiable;

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
        Region {
            start: addr,
            end: addr.saturating_add((len * size_of::<T>()) as u64),
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

/// Read access to a shadow's elements, by memory kind.
#[non_exhaustive]
pub enum Access<'a, T> {
    /// Host-addressable elements, safe to read now.
    Host(&'a [T]),
}

/// Write access to a shadow's elements, by memory kind.
#[non_exhaustive]
pub enum AccessMut<'a, T> {
    /// Host-addressable elements, safe to write now.
    Host(&'a mut [T]),
}

/// Memory that can hold a shadow (a derivative) of a copy's buffer.
///
/// Implemented for every memory kind the runtime knows: pageable host slices and vectors,
/// raw pointers with a declared kind, and the CUDA buffer types. A copy rule's `dst` and `src`
/// types must implement it, with the same element type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot hold a shadow for a derivative rule",
    label = "this buffer type does not implement `ShadowMemory`",
    note = "use a slice `[T]`, `Vec<T>`, a cudarc buffer (`CudaSlice<T>`, `CudaView<T>`, `CudaViewMut<T>`, `PinnedHostSlice<T>`, `UnifiedSlice<T>`), or implement `rules_runtime::ShadowMemory` for your type"
)]
pub trait ShadowMemory {
    /// The element type.
    type Elem: Differentiable;
    /// The memory kind, for dispatch and messages.
    fn kind(&self) -> MemoryKind;
    /// Number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The byte range, for alias checks.
    fn region(&self) -> Region;
    /// Read access.
    fn access(&self) -> Access<'_, Self::Elem>;
    /// Write access.
    fn access_mut(&mut self) -> AccessMut<'_, Self::Elem>;
}

/// Proof that two buffers hold the same element type, so one can be copied into the other.
#[diagnostic::on_unimplemented(
    message = "`{Self}` and `{Other}` hold different element types",
    label = "a copy's destination and source must hold the same element type",
    note = "a copy cannot convert: make `#[dst]` and `#[src]` hold the same element type"
)]
pub trait SameElem<Other: ?Sized> {}
impl<X, Y> SameElem<Y> for X
where
    X: ShadowMemory + ?Sized,
    Y: ShadowMemory<Elem = X::Elem> + ?Sized,
{
}

impl<M: ShadowMemory + ?Sized> ShadowMemory for &mut M {
    type Elem = M::Elem;
    fn kind(&self) -> MemoryKind {
        (**self).kind()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn region(&self) -> Region {
        (**self).region()
    }
    fn access(&self) -> Access<'_, Self::Elem> {
        (**self).access()
    }
    fn access_mut(&mut self) -> AccessMut<'_, Self::Elem> {
        (**self).access_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_relations() {
        let a = Region::of::<f32>(1000, 4); // 1000..1016
        assert_eq!(a.relation(a), Overlap::Same);
        assert_eq!(a.relation(Region::of::<f32>(1016, 4)), Overlap::Disjoint);
        assert_eq!(a.relation(Region::of::<f32>(1012, 4)), Overlap::Partial);
        assert_eq!(a.relation(Region::of::<f32>(1000, 3)), Overlap::Partial);
        assert_eq!(a.relation(Region::of::<f32>(1004, 0)), Overlap::Disjoint);
    }
}
