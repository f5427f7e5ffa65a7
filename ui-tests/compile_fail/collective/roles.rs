use rules_runtime::cudarc::driver::CudaSlice;
use rules_runtime::cudarc::nccl::Comm;
use rules_runtime::derivative_rule;

// No communicator, and no root.
#[derivative_rule(broadcast)]
fn no_comm_no_root(#[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>) {
    let _ = (x, y);
}

// A parameter named `root` that is not marked.
#[derivative_rule(reduce)]
fn unmarked_root(comm: &Comm, root: usize, #[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>) {
    let _ = (comm, root, x, y);
}

// An all-gather has no root; a send has no destination; a recv needs its peer.
#[derivative_rule(all_gather)]
fn gather_with_root(comm: &Comm, #[root] r: usize, #[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>) {
    let _ = (comm, r, x, y);
}

#[derivative_rule(send)]
fn send_with_dst(comm: &Comm, #[peer] p: usize, #[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>) {
    let _ = (comm, p, x, y);
}

#[derivative_rule(recv)]
fn recv_without_peer(comm: &Comm, #[dst] y: &mut CudaSlice<f32>) {
    let _ = (comm, y);
}

// Two communicators, neither marked; a send_recv missing `#[recv_from]`.
#[derivative_rule(send_recv)]
fn two_comms(a: &Comm, b: &Comm, #[send_to] to: usize, #[src] x: &CudaSlice<f32>, #[dst] y: &mut CudaSlice<f32>) {
    let _ = (a, b, to, x, y);
}

fn main() {}
