use rules_runtime::derivative_rule;

/// An error type that does not implement `std::error::Error`.
#[derive(Debug)]
struct CopyFailed;

#[derivative_rule(copy)]
fn fallible(#[dst] dst: &mut [f32], #[src] src: &[f32]) -> Result<(), CopyFailed> {
    if dst.len() != src.len() {
        return Err(CopyFailed);
    }
    dst.copy_from_slice(src);
    Ok(())
}

type Outcome = Option<()>;

#[derivative_rule(copy)]
fn aliased(#[dst] dst: &mut [f32], #[src] src: &[f32]) -> Outcome {
    dst.copy_from_slice(src);
    Some(())
}

fn main() {}
