//! A poor-man's profile of the host side of a call (feature `probe`, for `bench-overhead`): the
//! inclusive host time of named steps, summed per thread. The device machine has no `perf`, and
//! Nsight Systems could not make a report there (see the device notes), so the steps time
//! themselves. Without the feature a span is a unit value and costs nothing.

#[cfg(feature = "probe")]
mod imp {
    use std::cell::RefCell;
    use std::time::Instant;

    thread_local! {
        /// (step, total ns, count), in order of first use.
        static SPANS: RefCell<Vec<(&'static str, u64, u64)>> = const { RefCell::new(Vec::new()) };
    }

    /// Times the step `name` until dropped.
    pub(crate) struct Span(&'static str, Instant);

    impl Drop for Span {
        fn drop(&mut self) {
            let ns = u64::try_from(self.1.elapsed().as_nanos()).unwrap_or(u64::MAX);
            SPANS.with(|s| {
                let mut s = s.borrow_mut();
                match s.iter_mut().find(|e| e.0 == self.0) {
                    Some(e) => {
                        e.1 += ns;
                        e.2 += 1;
                    }
                    None => s.push((self.0, ns, 1)),
                }
            });
        }
    }

    pub(crate) fn span(name: &'static str) -> Span {
        Span(name, Instant::now())
    }

    /// The steps timed on this thread since the last call, and forgets them.
    pub(crate) fn take() -> Vec<(&'static str, u64, u64)> {
        SPANS.with(|s| std::mem::take(&mut *s.borrow_mut()))
    }
}

#[cfg(not(feature = "probe"))]
mod imp {
    /// Nothing: the profile is off. (Its empty `Drop` lets a step end early with `drop`, as
    /// with the profile on.)
    pub(crate) struct Span;

    impl Drop for Span {
        #[inline(always)]
        fn drop(&mut self) {}
    }

    #[inline(always)]
    pub(crate) fn span(_: &'static str) -> Span {
        Span
    }

    #[allow(dead_code)]
    pub(crate) fn take() -> Vec<(&'static str, u64, u64)> {
        Vec::new()
    }
}

#[cfg_attr(not(feature = "testing"), allow(unused_imports))]
pub(crate) use imp::{span, take};
