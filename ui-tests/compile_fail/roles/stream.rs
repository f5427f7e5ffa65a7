use rules_runtime::derivative_rule;

struct MyStream;

#[derivative_rule(copy)]
fn not_a_stream(#[dst] dst: &mut [f32], #[src] src: &[f32], #[stream] s: &MyStream) {
    let _ = s;
    dst.copy_from_slice(src);
}

#[derivative_rule(copy)]
fn two_streams(
    #[dst] dst: &mut [f32],
    #[src] src: &[f32],
    #[stream] a: &MyStream,
    #[stream] b: &MyStream,
) {
    let _ = (a, b);
    dst.copy_from_slice(src);
}

fn main() {}
