//! Runtime tests: the whole pipeline on one process (`pipeline`), graph, trace and stall
//! output (`observability`), and the panic guards of the runtime's threads (`thread_guard`).

mod observability;
mod pipeline;
mod thread_guard;

/// The ranks of a failed job abort one after another (Open MPI's launcher can hang when every
/// rank calls `MPI_Abort` at once), and no rank waits much longer than the documented grace.
#[test]
fn neighbouring_ranks_abort_a_failed_shutdown_at_different_times() {
    let graces: Vec<_> = (0..8).map(super::shutdown_grace).collect();
    for pair in graces.windows(2) {
        assert!(
            pair[1] >= pair[0] + std::time::Duration::from_millis(400),
            "{graces:?}"
        );
    }
    assert_eq!(graces[0], super::FAILED_SHUTDOWN_GRACE);
    assert!(
        (0..4096).all(|rank| super::shutdown_grace(rank) < super::FAILED_SHUTDOWN_GRACE * 2),
        "a rank's grace exceeds twice the documented one"
    );
}
