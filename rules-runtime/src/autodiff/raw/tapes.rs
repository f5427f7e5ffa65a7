//! The tapes of the bridges' augmented primals, kept on a per-thread stack for their reverses.
//!
//! An augmented primal returns nothing to Enzyme: one that returns a tape (for a primal that
//! returns nothing) makes rustc's Enzyme print the IR of both functions into the build's
//! output (docs/autodiff.md, "Reading Enzyme's output"). Its tape is kept here instead, with the
//! call's arguments and their shadow slots. Enzyme's reverse sweep calls the reverses of one
//! differentiation in the reverse order of their augmented primals, on the thread that ran them,
//! with the same arguments, so the last entry saved on this thread is the one the reverse being
//! called needs. A reverse takes the top entry only if it is of its own bridge (the arguments'
//! type, which each bridge has its own of) and holds the same arguments; otherwise it takes
//! nothing, records [`AdError::TapeOrder`] and does nothing.
//!
//! An entry whose reverse never runs (a differentiated function that panicked between the two),
//! or whose reverse was refused, stays below the later ones until its thread ends, which drops it
//! with its tape.

use crate::autodiff::{AdError, Bridge, record};
use std::any::Any;
use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What an augmented primal hands to its reverse: the rule's tape, boxed, or `None` after the
/// error the augmented primal recorded.
pub type Tape = Option<Box<dyn Any>>;

/// One augmented primal's entry: the call's arguments, their shadow slots and the tape, in the
/// bridge's own type.
struct Entry {
    data: Box<dyn Any>,
    /// Whether it holds a tape (the augmented primal did not fail).
    #[cfg(all(test, feature = "autodiff"))]
    kept: bool,
}

/// This thread's entries, the last saved last.
struct Stack(Vec<Entry>);

impl Drop for Stack {
    /// At the thread's end (entries left by a differentiation that panicked between an augmented
    /// primal and its reverse), each entry is dropped on its own: a tape's drop may need a
    /// thread-local destroyed before this one, and a panic out of a thread-local's destructor
    /// aborts the process, so one is caught here and its payload leaked.
    fn drop(&mut self) {
        for entry in self.0.drain(..).rev() {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(entry))) {
                core::mem::forget(payload);
            }
        }
    }
}

thread_local! {
    static SAVED: RefCell<Stack> = const { RefCell::new(Stack(Vec::new())) };
}

/// Keeps an augmented primal's tape for its reverse ([`take`]), with the call's arguments `args`
/// and their shadow slots `shadows` (a bridge's own type).
pub fn save<A: 'static>(args: A, shadows: A, tape: Tape) {
    // During the thread's teardown there is nowhere to keep it: the reverse will find no entry
    // and record the error.
    let entry = Entry {
        #[cfg(all(test, feature = "autodiff"))]
        kept: tape.is_some(),
        data: Box::new((args, shadows, tape)),
    };
    let _ = SAVED.try_with(|s| s.borrow_mut().0.push(entry));
}

/// The tape the augmented primal of this call saved: the top entry, if it is of this bridge and
/// holds these arguments and shadow slots; else `None`, with [`AdError::TapeOrder`] recorded for
/// the bridge `name`'s reverse.
pub fn take<A: PartialEq + 'static>(name: &'static str, args: &A, shadows: &A) -> Option<Tape> {
    let taken = SAVED
        .try_with(|s| {
            let s = &mut s.borrow_mut().0;
            let ours = s
                .last()
                .and_then(|e| e.data.downcast_ref::<(A, A, Tape)>())
                .is_some_and(|(a, d, _)| a == args && d == shadows);
            if ours { s.pop() } else { None }
        })
        .ok()
        .flatten()
        .and_then(|e| e.data.downcast::<(A, A, Tape)>().ok());
    match taken {
        Some(entry) => Some(entry.2),
        None => {
            let _ = record((name, Bridge::Rev), || Err::<(), _>(AdError::TapeOrder));
            None
        }
    }
}

/// How many entries this thread holds: augmented primals whose reverse has not taken their tape.
pub(crate) fn saved_len() -> usize {
    SAVED.try_with(|s| s.borrow().0.len()).unwrap_or(0)
}

/// Whether the last augmented primal on this thread kept a tape (tests: it did not fail).
#[cfg(all(test, feature = "autodiff"))]
pub(crate) fn aug_ok() -> bool {
    SAVED.with(|s| s.borrow().0.last().is_some_and(|e| e.kept))
}
