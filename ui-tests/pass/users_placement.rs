//! Module-level rules after text that reads like an `impl` to a careless reader: continued
//! strings, a raw string ending in a backslash, characters of several bytes, and a macro whose
//! own input language writes `impl`.
#![deny(warnings)]

use rules_runtime::derivative_rule;
use rules_runtime::prelude::*;

pub const HELP: &str = "usage: tool \
    --input FILE \
    --output FILE";

pub struct Paths;
impl Paths {
    pub const SEP: &'static str = r"\";
    pub const OPEN: [char; 3] = ['«','(','{'];
}

#[derivative_rule(copy)]
pub fn after_strings(#[dst] dst: &mut [f32], #[src] src: &[f32]) {
    dst.copy_from_slice(src);
}

macro_rules! copies {
    (impl $t:ty { $(fn $name:ident;)* }) => {$(
        #[derivative_rule(copy)]
        pub fn $name(#[dst] dst: &mut [$t], #[src] src: &[$t]) {
            dst.copy_from_slice(src);
        }
    )*};
}
copies! { impl f32 { fn copy_a; fn copy_b; } }

impl Paths {
    pub fn help() -> &'static str {
        HELP
    }
}

fn main() {
    let (mut y, x) = ([0.0f32; 2], [1.0f32; 2]);
    after_strings_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    copy_a_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    copy_b_rule().forward(Const(&mut y[..]), Const(&x[..])).unwrap();
    let _ = (Paths::help(), Paths::SEP, Paths::OPEN);
}
