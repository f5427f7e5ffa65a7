//! Streams as users hold them: behind a type alias, in a newtype or a struct of their own that
//! implements `AsStream`, or a generic bounded by it. Each one is the stream the rule orders its
//! shadow work on. With cudarc's event tracking off (as graph users run), a shadow step on any
//! other stream (a buffer's own) is unordered with the copy's: a seed written on the copy's
//! stream right before the reverse would be read before it lands.
//!
//! `#[ignore]`d: without a GPU they are reported skipped, never passed; asked for with
//! `--ignored` on a machine without one, they fail.

use rules_runtime::cudarc::driver::{CudaContext, CudaSlice, CudaStream, DriverError};
use rules_runtime::ops::AsStream;
use rules_runtime::{Active, CopyRule, Duplicated, FillRule, MemsetRule, On, derivative_rule};
use std::sync::Arc;

/// The stream as many codebases name it.
type Stream = Arc<CudaStream>;

/// A device handle of the user's: the stream its copies run on, and a label.
struct Device {
    stream: Arc<CudaStream>,
    name: &'static str,
}

impl AsStream for Device {
    fn as_stream(&self) -> &CudaStream {
        &self.stream
    }
}

#[derivative_rule(copy)]
fn dtod(
    stream: &Stream,
    #[dst] dst: &mut CudaSlice<f32>,
    #[src] src: &CudaSlice<f32>,
) -> Result<(), DriverError> {
    stream.memcpy_dtod(src, dst)
}

#[derivative_rule(memset)]
fn clear(dev: &Device, #[dst] dst: &mut CudaSlice<f32>) -> Result<(), DriverError> {
    assert!(!dev.name.is_empty());
    dev.stream.memset_zeros(dst)
}

/// A stream holder of the user's own trait, which lends cudarc's `Arc` for its copies.
trait Holder: AsStream {
    fn arc(&self) -> &Arc<CudaStream>;
}
impl Holder for Device {
    fn arc(&self) -> &Arc<CudaStream> {
        &self.stream
    }
}
impl Holder for Arc<CudaStream> {
    fn arc(&self) -> &Arc<CudaStream> {
        self
    }
}

#[derivative_rule(fill)]
fn fill<S: Holder>(
    stream: &S,
    #[dst] dst: &mut CudaSlice<f32>,
    #[value] v: f32,
) -> Result<(), DriverError> {
    let host = vec![v; dst.len()];
    stream.arc().memcpy_htod(&host, dst)
}

/// A context of its own with event tracking off, a second stream (the copy's), and buffers made
/// on the context's default stream, so that each buffer's own stream is not the copy's.
fn setup() -> (Arc<CudaContext>, Arc<CudaStream>, Arc<CudaStream>) {
    let ctx = rules_runtime::cuda::context(0).unwrap_or_else(|e| {
        panic!("the GPU suite needs a usable GPU ({e}); without one it stays ignored")
    });
    // SAFETY: every buffer of these tests is used on the copy's stream, or after a
    // synchronisation of the stream it was made on.
    unsafe { ctx.disable_event_tracking() };
    let home = ctx.default_stream();
    let copy = ctx.new_stream().expect("a second stream");
    (ctx, home, copy)
}

fn same(on: On<'_>, s: &CudaStream) -> bool {
    matches!(on, On::Stream(x) if std::ptr::eq(x, s))
}

#[test]
#[ignore = "needs a GPU"]
fn each_form_of_stream_is_the_stream_the_rule_orders_on() {
    let (_ctx, _home, copy) = setup();
    let dev = Device {
        stream: copy.clone(),
        name: "dev",
    };
    assert!(same(
        CopyRule::<CudaSlice<f32>, CudaSlice<f32>>::__on(&dtod_rule(&copy)),
        &copy
    ));
    assert!(same(
        MemsetRule::<CudaSlice<f32>>::__plan(&clear_rule(&dev)).0,
        &copy
    ));
    assert!(same(
        FillRule::<CudaSlice<f32>>::__plan(&fill_rule(&dev)).0,
        &copy
    ));
    assert!(same(
        FillRule::<CudaSlice<f32>>::__plan(&fill_rule(&copy)).0,
        &copy
    ));
}

/// Keeps `copy` busy for a few milliseconds (device-to-device copies of 256 MiB), so that work
/// enqueued on it next lands late: a shadow step on any other stream would run first.
fn busy(copy: &Arc<CudaStream>, a: &CudaSlice<f32>, b: &mut CudaSlice<f32>) {
    for _ in 0..16 {
        copy.memcpy_dtod(a, b).unwrap();
    }
}

/// The reverse of a copy through an alias stream, its seed written on the copy's stream just
/// before (behind a busy stream): exact, every time.
#[test]
#[ignore = "needs a GPU"]
fn a_reverse_through_an_alias_stream_waits_for_the_seed_on_that_stream() {
    let (_ctx, home, copy) = setup();
    let n = 1 << 24;
    let seed: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 + 1.0).collect();
    let seed_dev = home.clone_htod(&seed).unwrap();
    let big_a = home.alloc_zeros::<f32>(1 << 26).unwrap();
    let mut big_b = home.alloc_zeros::<f32>(1 << 26).unwrap();
    for round in 0..5 {
        let x = home.clone_htod(&vec![1.0f32; n]).unwrap();
        let mut dx = home.alloc_zeros::<f32>(n).unwrap();
        let mut y = home.alloc_zeros::<f32>(n).unwrap();
        let mut dy = home.alloc_zeros::<f32>(n).unwrap();
        home.synchronize().unwrap();
        let mut rule = dtod_rule(&copy);
        let tape = rule
            .augmented_primal(
                Duplicated::new(&mut y, &mut dy),
                Duplicated::new(&x, &mut dx),
            )
            .unwrap();
        busy(&copy, &big_a, &mut big_b);
        copy.memcpy_dtod(&seed_dev, &mut dy).unwrap();
        rule.reverse(
            tape,
            Duplicated::new(&mut y, &mut dy),
            Duplicated::new(&x, &mut dx),
        )
        .unwrap();
        copy.synchronize().unwrap();
        home.synchronize().unwrap();
        let got = copy.clone_dtoh(&dx).unwrap();
        let wrong = got.iter().zip(&seed).filter(|(a, b)| a != b).count();
        assert_eq!(
            wrong, 0,
            "round {round}: {wrong} of {n} elements of dx are not the seed"
        );
        let left = copy.clone_dtoh(&dy).unwrap();
        assert!(
            left.iter().all(|&v| v == 0.0),
            "round {round}: dy not consumed"
        );
    }
}

/// A memset through a newtype and a fill through a generic, each after a write of the shadow on
/// the copy's stream (behind a busy stream): the rules write the shadow after that write, not
/// before it.
#[test]
#[ignore = "needs a GPU"]
fn memset_and_fill_through_user_streams_order_after_the_copys_stream() {
    let (_ctx, home, copy) = setup();
    let n = 1 << 24;
    let dev = Device {
        stream: copy.clone(),
        name: "dev",
    };
    let ones = home.clone_htod(&vec![1.0f32; n]).unwrap();
    let big_a = home.alloc_zeros::<f32>(1 << 26).unwrap();
    let mut big_b = home.alloc_zeros::<f32>(1 << 26).unwrap();
    for round in 0..5 {
        let mut y = home.alloc_zeros::<f32>(n).unwrap();
        let mut dy = home.alloc_zeros::<f32>(n).unwrap();
        home.synchronize().unwrap();
        busy(&copy, &big_a, &mut big_b);
        copy.memcpy_dtod(&ones, &mut dy).unwrap();
        clear_rule(&dev)
            .forward(Duplicated::new(&mut y, &mut dy))
            .unwrap();
        copy.synchronize().unwrap();
        home.synchronize().unwrap();
        let got = copy.clone_dtoh(&dy).unwrap();
        let wrong = got.iter().filter(|&&v| v != 0.0).count();
        assert_eq!(
            wrong, 0,
            "round {round}: {wrong} elements of the memset's shadow not zero"
        );

        let tape = fill_rule(&copy)
            .augmented_primal(Duplicated::new(&mut y, &mut dy), Active(2.0f32))
            .unwrap();
        busy(&copy, &big_a, &mut big_b);
        copy.memcpy_dtod(&ones, &mut dy).unwrap();
        let [dv] = fill_rule(&copy)
            .reverse(tape, Duplicated::new(&mut y, &mut dy), Active(2.0f32))
            .unwrap();
        assert_eq!(dv, n as f32, "round {round}: d_v is the sum of the seed");
        copy.synchronize().unwrap();
    }
}
