//! The arguments of a rule object whose primal is an `unsafe fn` on references (not raw
//! pointers). Its rule trait's methods are safe and call the primal, so what makes those calls
//! sound is the promise made to the generated `unsafe` constructor: every call meets the primal's
//! contract with *these* arguments. The generated struct is declared in the user's module, where
//! its fields are visible: fields of their own would let that module build a rule object with a
//! struct literal, or change an argument by assignment, without `unsafe`. So the struct holds its
//! arguments in one [`UnsafeArgs`], which only `unsafe` code can make or reach.

/// A rule object's other arguments, made and reached only through `unsafe` (see the module
/// docs). Made only by generated code.
///
/// One value holds all of a rule's arguments, of a type the macro declares for that rule alone
/// (`__name_rule_args`): arguments cannot be swapped one by one between two rule objects (each
/// vouched for with its own arguments), nor moved into another rule's object. Moving the whole
/// value from one object of the same rule into another is moving the object itself. Not `Clone`:
/// a second object with the same arguments would be one nobody vouched for.
#[doc(hidden)]
pub struct UnsafeArgs<A>(A);

impl<A> UnsafeArgs<A> {
    /// Holds `args`.
    ///
    /// # Safety
    /// The contract of the generated constructor: every call of the rule object's methods meets
    /// the primal's contract when called with `args` (with the primal buffers, and again with
    /// each lane's shadows).
    #[inline]
    pub unsafe fn new(args: A) -> Self {
        UnsafeArgs(args)
    }

    /// The arguments, to read.
    ///
    /// # Safety
    /// Nothing is changed through the reference (an argument with interior mutability included):
    /// the constructor's caller vouched for the arguments as they were given.
    #[inline]
    pub unsafe fn get(&self) -> &A {
        &self.0
    }

    /// The arguments, to reborrow their `&mut` references for the primal's call.
    ///
    /// # Safety
    /// As [`UnsafeArgs::get`]: no argument is replaced or changed; the references they hold are
    /// only passed on to the primal.
    #[inline]
    pub unsafe fn get_mut(&mut self) -> &mut A {
        &mut self.0
    }
}
