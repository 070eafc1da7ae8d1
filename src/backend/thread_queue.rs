//! An in-order worker thread: jobs run one after another on a named thread, each completing an
//! [`AsyncEvent`]. Host lanes, emulated devices and the allocation queue are thread queues.
//!
//! Protocol: jobs go into a locked inbox that the thread empties in one swap and then runs in
//! order. An idle thread announces that it sleeps before it parks (and looks at the inbox once
//! more after announcing), so a submitter pays for a wake-up (a futex call) only when the thread
//! really sleeps. A queue may hold its wake-ups back (`ThreadQueue::submit_held`) until
//! [`ThreadQueue::wake`]: the executor hands a lane every instruction that became ready in one
//! pass and wakes it once, instead of once per instruction.
//!
//! Jobs complete in order, so a job's event is its sequence number in the queue's
//! [`InOrderProgress`]: queuing allocates neither an event nor, for kernel and host-task chunks
//! (`Job::Launch`), the job.
//!
//! A job that panics completes its event with an internal error naming the thread and the
//! panic; the thread keeps serving later jobs. Dropping the queue lets queued jobs finish, then
//! joins the thread.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::event::{AsyncEvent, CacheLine, Completion, InOrderProgress};
use super::interface::{KernelInvocation, LaunchEnvironment, Launcher};
use crate::error::{Error, Result};
use crate::thread_guard::panic_message;

/// What a thread queue runs: a job that a backend describes by value (kernel and host-task
/// chunks: queued without an allocation), or any closure (boxed).
#[expect(
    clippy::large_enum_variant,
    reason = "the chunk is stored inline on purpose: boxing it is the allocation per chunk that this type avoids"
)]
pub(crate) enum Job {
    /// A kernel or host-task chunk on the host.
    Launch(HostLaunch),
    /// Anything else.
    Boxed(Box<dyn FnOnce() -> Result<Completion> + Send>),
}

impl Job {
    fn run(self) -> Result<Completion> {
        match self {
            Job::Launch(launch) => launch.run(),
            Job::Boxed(job) => job(),
        }
    }
}

/// What can be queued on a thread queue.
pub(crate) trait IntoJob {
    /// The job.
    fn into_job(self) -> Job;
}

impl<F: FnOnce() -> Result<Completion> + Send + 'static> IntoJob for F {
    fn into_job(self) -> Job {
        Job::Boxed(Box::new(self))
    }
}

/// A kernel or host-task chunk for a host thread (host tasks, and kernels of emulated devices):
/// `launcher` over `invocation`. Queued by value (see [`Job::Launch`]).
pub(crate) struct HostLaunch {
    launcher: Launcher,
    invocation: KernelInvocation,
}

impl HostLaunch {
    pub(crate) fn new(launcher: Launcher, invocation: KernelInvocation) -> Self {
        Self {
            launcher,
            invocation,
        }
    }

    fn run(self) -> Result<Completion> {
        // SAFETY: host and emulated-device memory is host memory; the slots belong to this chunk.
        unsafe { self.invocation.write_host_reduction_identities() };
        let environment = LaunchEnvironment {
            stream: 0,
            cuda: false,
        };
        (self.launcher)(&self.invocation, &environment).map(|()| Completion::Done)
    }
}

impl IntoJob for HostLaunch {
    fn into_job(self) -> Job {
        Job::Launch(self)
    }
}

/// A queued job: what to run, its sequence number (its event's), and whom to wake when done.
struct Entry {
    job: Job,
    sequence: u64,
    waiter: Thread,
}

#[derive(Default)]
struct Pending {
    entries: VecDeque<Entry>,
    /// The sequence number of the next job submitted.
    next_sequence: u64,
}

/// What the submitting side and the worker share.
#[derive(Default)]
struct Inbox {
    pending: Mutex<Pending>,
    /// How far the jobs have run: the events of this queue.
    progress: Arc<InOrderProgress>,
    /// What a polling worker watches, alone on its cache line: a push writes the lock, the list
    /// and `pushed`, and a worker polling a line shared with them pulled it back between those
    /// writes. On an H100 host lanes polling 1 ms took independent `host:4` tasks from 3.4-4.2
    /// to 11.7-12.0 µs per task that way, 4.3-4.6 with this line apart (docs/benchmarks.md,
    /// "the lanes' regression was a shared cache line").
    polled: CacheLine<Polled>,
    /// The worker found the inbox empty and parks (or is about to): a submitter must unpark it.
    sleeping: AtomicBool,
}

#[derive(Default)]
struct Polled {
    /// How many jobs were ever pushed: a polling worker watches this instead of taking the
    /// lock, which would contend with every submitter's push.
    pushed: AtomicU64,
    /// No more jobs come: the worker ends once the inbox is empty.
    closed: AtomicBool,
}

impl Inbox {
    /// The worker's loop: runs every job in submission order until the queue is dropped.
    fn serve(&self, thread_name: &str, spin: Duration, pollers: &IdlePollers) {
        let mut batch = VecDeque::new();
        let mut idle_since = Instant::now();
        let mut taken = 0u64;
        // Holds one of the process's polling places (see `IdlePollers`) from its first idle
        // look until it parks, through every job it runs meanwhile.
        let mut polling = false;
        loop {
            if self.polled.0.pushed.load(Ordering::Acquire) == taken
                && idle_since.elapsed() < pollers.idle_poll(spin)
                && !self.polled.0.closed.load(Ordering::Relaxed)
                && (polling || {
                    polling = pollers.try_enter();
                    polling
                })
            {
                // The next job of a dependency chain usually follows within microseconds; a
                // parked thread takes several to wake (tens on a VM's idle vCPU).
                std::hint::spin_loop();
                continue;
            }
            std::mem::swap(&mut self.pending.lock().entries, &mut batch);
            taken += batch.len() as u64;
            if batch.is_empty() {
                if std::mem::take(&mut polling) {
                    pollers.leave();
                }
                if self.polled.0.closed.load(Ordering::SeqCst) {
                    return;
                }
                // Announce first, then look once more: a job pushed after that look finds
                // `sleeping` set and unparks this thread (the inbox lock orders the two).
                self.sleeping.store(true, Ordering::SeqCst);
                if self.pending.lock().entries.is_empty()
                    && !self.polled.0.closed.load(Ordering::SeqCst)
                {
                    std::thread::park();
                }
                self.sleeping.store(false, Ordering::SeqCst);
                idle_since = Instant::now();
                continue;
            }
            for entry in batch.drain(..) {
                let job = entry.job;
                let outcome =
                    catch_unwind(AssertUnwindSafe(|| job.run())).unwrap_or_else(|payload| {
                        let message = panic_message(payload.as_ref());
                        Err(Error::internal(format!(
                            "panic on thread {thread_name}: {message}"
                        )))
                    });
                self.progress.complete(entry.sequence, outcome);
                // Cheap unless the waiter parks: then it learns of the completion at once.
                entry.waiter.unpark();
            }
            idle_since = Instant::now();
        }
    }
}

/// How long a GPU's submission thread polls for its next job after the last one before it
/// parks, where [`set_idle_pollers`] leaves it a place: as long as the executor polls for a
/// peer's data. A parked thread took about 5 µs to wake on an idle core of a GPU host, and the
/// next launch often comes later than a brief poll lasts: on an H100 host (16 cores, alternating
/// runs, docs/benchmarks.md, "lanes that poll, at most one per spare core") 1 ms instead of
/// 20 µs took the GPU task floor from 6.5-6.7 to 4.1-4.7 µs per independent and from 4.9-5.0
/// to 2.5-2.7 µs per chained empty kernel. One thread per device, so it never polls beside
/// siblings of its own device.
pub const SUBMISSION_SPIN: Duration = Duration::from_millis(1);

/// How long a lane (a thread of an emulated device, a host-task or copy lane) or an allocation
/// queue polls for its next job before it parks, where [`set_idle_pollers`] leaves it a place.
/// Lanes polled 1 ms for a while, which took the emulated-device stencil's granularity
/// METG(50 %) under `mpirun -n 2` from 34.8 to 23.2 µs, but independent tasks on `host:4` (16
/// lanes, all in use) from 2.5-3.0 to 11.2-11.6 µs on one H100 host and from 6.7-8.6 to
/// 17.3-20.7 on another: the inbox's watched fields shared a cache line with the lock a push
/// takes (fixed, see `Inbox::polled`). They poll [`PEER_WAIT_POLL`] while an executor waits for a
/// peer's data. Polling 1 ms at all times, measured with the fix, still took independent
/// `host:4` tasks from 3.66 to 4.59 µs per task (mean, H100 host; docs/benchmarks.md, "lanes
/// stay at 20 µs").
pub const BRIEF_SPIN: Duration = Duration::from_micros(20);

/// How many of the process's queue threads may poll for their next job ([`SUBMISSION_SPIN`],
/// [`BRIEF_SPIN`]) at once; the others park as soon as they run out of work. A thread takes a
/// place at its first idle look and keeps it, through the jobs it runs meanwhile, until it
/// parks: two atomic operations per park, none per job.
struct IdlePollers {
    /// Places: set by the runtime from its spare cores.
    limit: AtomicUsize,
    /// Places taken. Counted apart from `limit` so that a new limit (a later runtime in the
    /// same process) leaves the places that threads still hold accounted for.
    taken: AtomicUsize,
    /// Executors of the process now waiting for a peer's data (see [`PeerWaitAnnouncement`]).
    executors_awaiting_peers: AtomicUsize,
    /// How long a queue thread polls while an executor waits for a peer's data.
    peer_wait_poll: Duration,
}

impl IdlePollers {
    /// How long a thread that normally polls `spin` polls now: longer while an executor
    /// waits for a peer's data, whose arrival releases work for the lanes at once.
    #[inline]
    fn idle_poll(&self, spin: Duration) -> Duration {
        if self.executors_awaiting_peers.load(Ordering::Relaxed) > 0 {
            spin.max(self.peer_wait_poll)
        } else {
            spin
        }
    }

    fn try_enter(&self) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        self.taken
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |taken| {
                (taken < limit).then_some(taken + 1)
            })
            .is_ok()
    }

    fn leave(&self) {
        self.taken.fetch_sub(1, Ordering::Relaxed);
    }

    fn set_awaiting_peers(&self, awaiting: bool) {
        if awaiting {
            self.executors_awaiting_peers
                .fetch_add(1, Ordering::Relaxed);
        } else {
            self.executors_awaiting_peers
                .fetch_sub(1, Ordering::Relaxed);
        }
    }
}

static IDLE_POLLERS: IdlePollers = IdlePollers {
    limit: AtomicUsize::new(0),
    taken: AtomicUsize::new(0),
    executors_awaiting_peers: AtomicUsize::new(0),
    peer_wait_poll: PEER_WAIT_POLL,
};

/// How long a queue thread with a polling place polls for its next job while an executor of the
/// process waits for a peer's data (an MPI receive or send in flight). The job after a
/// receive waits for a whole exchange (the peer's kernel, its send, the receive): longer than
/// [`BRIEF_SPIN`] wherever a step takes more than a few microseconds, so a lane that had parked
/// paid its wake-up (about 5 µs on a GPU host) in every step. On an H100 host this took the
/// emulated-device stencil's METG(50 %) under `mpirun -n 2` from 28.7 to 24.0 µs (mean of three,
/// docs/benchmarks.md, "lanes poll while a peer is awaited"); a single-rank run never waits.
pub const PEER_WAIT_POLL: Duration = Duration::from_millis(1);

/// An executor's announcement that it waits for a peer's data: while any executor of the
/// process has one up, queue threads with a polling place poll [`PEER_WAIT_POLL`] after their
/// last job instead of their usual time. Withdrawn when dropped, so the process-wide count
/// cannot be left raised by an executor that ends mid-wait.
#[derive(Default)]
pub struct PeerWaitAnnouncement {
    announced: bool,
}

impl PeerWaitAnnouncement {
    /// Raises (`true`) or withdraws (`false`) the announcement; repeating the current state
    /// costs a comparison.
    pub fn set(&mut self, awaiting: bool) {
        if awaiting != self.announced {
            IDLE_POLLERS.set_awaiting_peers(awaiting);
            self.announced = awaiting;
        }
    }
}

impl Drop for PeerWaitAnnouncement {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// Lets at most `threads` queue threads of the process at once poll for their next job before
/// they park; 0: every one parks at once. The runtime gives the cores that none of its other
/// busy threads needs: a polling thread without a core of its own takes turns with the threads
/// that have work (the executor, the scheduler, a lane with a job). Emulated devices open up to
/// four lanes each (the executor's `MAX_DEVICE_LANES`), more threads than the rule that allows
/// polling counts (one per device).
pub fn set_idle_pollers(threads: usize) {
    IDLE_POLLERS.limit.store(threads, Ordering::Relaxed);
}

/// An in-order job queue served by one thread.
pub struct ThreadQueue {
    name: String,
    inbox: Arc<Inbox>,
    thread: Option<JoinHandle<()>>,
    /// Jobs were submitted with their wake-up held back since the last [`Self::wake`].
    held: bool,
}

impl ThreadQueue {
    /// Starts the thread `name` (visible in debuggers and profilers), which polls for its next
    /// job for [`BRIEF_SPIN`] where allowed: a lane or an allocation queue.
    pub fn new(name: impl Into<String>) -> Result<Self> {
        Self::with_idle_poll(name, BRIEF_SPIN)
    }

    /// Like [`Self::new`], polling for `spin` where allowed: [`SUBMISSION_SPIN`] for a GPU's
    /// submission thread.
    pub fn with_idle_poll(name: impl Into<String>, spin: Duration) -> Result<Self> {
        Self::with_pollers(name, spin, &IDLE_POLLERS)
    }

    fn with_pollers(
        name: impl Into<String>,
        spin: Duration,
        pollers: &'static IdlePollers,
    ) -> Result<Self> {
        let name = name.into();
        let inbox = Arc::new(Inbox::default());
        let (worker_inbox, thread_name) = (inbox.clone(), name.clone());
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || worker_inbox.serve(&thread_name, spin, pollers))
            .map_err(|e| Error::internal(format!("cannot start thread {name}: {e}")))?;
        Ok(Self {
            name,
            inbox,
            thread: Some(thread),
            held: false,
        })
    }

    /// The thread's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues `job` behind every job submitted before it.
    pub fn submit(&self, job: impl FnOnce() -> Result<Completion> + Send + 'static) -> AsyncEvent {
        self.submit_job(job.into_job())
    }

    /// Like [`Self::submit`], for any job.
    pub(crate) fn submit_job(&self, job: Job) -> AsyncEvent {
        let event = self.push(job);
        self.unpark_if_sleeping();
        event
    }

    /// Like [`Self::submit_job`], but a sleeping thread is only woken by the next
    /// [`Self::wake`].
    pub(crate) fn submit_held(&mut self, job: Job) -> AsyncEvent {
        self.held = true;
        self.push(job)
    }

    /// Wakes the thread for the jobs of `submit_held` since the last call, if it sleeps.
    pub fn wake(&mut self) {
        if std::mem::take(&mut self.held) {
            self.unpark_if_sleeping();
        }
    }

    fn push(&self, job: Job) -> AsyncEvent {
        let waiter = std::thread::current();
        let mut pending = self.inbox.pending.lock();
        let sequence = pending.next_sequence;
        pending.next_sequence += 1;
        pending.entries.push_back(Entry {
            job,
            sequence,
            waiter,
        });
        self.inbox
            .polled
            .0
            .pushed
            .store(pending.next_sequence, Ordering::Release);
        drop(pending);
        AsyncEvent::in_order(self.inbox.progress.clone(), sequence)
    }

    fn unpark_if_sleeping(&self) {
        if self.inbox.sleeping.load(Ordering::SeqCst)
            && let Some(thread) = &self.thread
        {
            thread.thread().unpark();
        }
    }
}

impl Drop for ThreadQueue {
    fn drop(&mut self) {
        self.inbox.polled.0.closed.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// A pool of lanes (in-order thread queues), created on first use and named
/// `<prefix>-<index>`.
pub(crate) struct Lanes {
    prefix: String,
    lanes: Vec<ThreadQueue>,
    /// Submissions hold their wake-ups until [`Self::wake`] (see [`Self::hold_wakeups`]).
    holding: bool,
}

impl Lanes {
    /// An empty pool whose threads are named `<prefix>-<index>`.
    pub(crate) fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            lanes: Vec::new(),
            holding: false,
        }
    }

    /// From now on submissions wake their lane only at the next [`Self::wake`].
    pub(crate) fn hold_wakeups(&mut self) {
        self.holding = true;
    }

    /// Wakes every lane that received work since the last call and submits with immediate
    /// wake-ups again.
    pub(crate) fn wake(&mut self) {
        self.holding = false;
        self.lanes.iter_mut().for_each(ThreadQueue::wake);
    }

    /// Queues `job` on lane `index` (creating lanes up to it); a lane that cannot be started
    /// fails the returned event.
    pub(crate) fn submit(&mut self, index: usize, job: impl IntoJob) -> AsyncEvent {
        while self.lanes.len() <= index {
            match ThreadQueue::new(format!("{}-{}", self.prefix, self.lanes.len())) {
                Ok(lane) => self.lanes.push(lane),
                Err(error) => return AsyncEvent::ready(Err(error)),
            }
        }
        let lane = &mut self.lanes[index];
        if self.holding {
            lane.submit_held(job.into_job())
        } else {
            lane.submit_job(job.into_job())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn wait(event: &AsyncEvent) {
        while !event.is_complete() {
            std::thread::yield_now();
        }
    }

    #[test]
    fn jobs_run_in_submission_order_on_the_named_thread() {
        let queue = ThreadQueue::new("celerity-test-lane").unwrap();
        let order = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let events: Vec<_> = (0..50)
            .map(|i| {
                let order = order.clone();
                queue.submit(move || {
                    assert_eq!(std::thread::current().name(), Some("celerity-test-lane"));
                    order.lock().push(i);
                    Ok(Completion::Done)
                })
            })
            .collect();
        wait(events.last().unwrap());
        assert!(events.iter().all(AsyncEvent::is_complete));
        assert_eq!(*order.lock(), (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn a_panicking_job_fails_its_event_and_the_queue_survives() {
        let queue = ThreadQueue::new("celerity-test-panic").unwrap();
        let failing = queue.submit(|| panic!("kernel exploded"));
        let counter = Arc::new(AtomicUsize::new(0));
        let c = counter.clone();
        let next = queue.submit(move || {
            c.fetch_add(1, Ordering::SeqCst);
            Ok(Completion::Done)
        });
        wait(&next);
        let error = failing.take_outcome().unwrap().unwrap_err();
        assert!(
            error.message().contains("kernel exploded"),
            "{}",
            error.message()
        );
        assert!(error.message().contains("celerity-test-panic"));
        assert_eq!(counter.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn no_more_idle_queues_poll_than_allowed_and_parked_ones_still_run_their_jobs() {
        static ONE_PLACE: IdlePollers = IdlePollers {
            limit: AtomicUsize::new(1),
            taken: AtomicUsize::new(0),
            executors_awaiting_peers: AtomicUsize::new(0),
            peer_wait_poll: PEER_WAIT_POLL,
        };
        // Polling for a minute: a queue that parks does so because it found no place.
        let queues: Vec<_> = (0..3)
            .map(|i| {
                let name = format!("celerity-test-poller-{i}");
                ThreadQueue::with_pollers(name, Duration::from_secs(60), &ONE_PLACE).unwrap()
            })
            .collect();
        for queue in &queues {
            wait(&queue.submit(|| Ok(Completion::Done)));
        }
        let parked = || {
            queues
                .iter()
                .filter(|queue| queue.inbox.sleeping.load(Ordering::SeqCst))
                .count()
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while parked() < 2 && Instant::now() < deadline {
            std::thread::yield_now();
        }
        assert_eq!(parked(), 2, "one idle queue polls, the two others park");
        assert_eq!(ONE_PLACE.taken.load(Ordering::SeqCst), 1);

        let counter = Arc::new(AtomicUsize::new(0));
        for queue in &queues {
            let c = counter.clone();
            wait(&queue.submit(move || {
                c.fetch_add(1, Ordering::SeqCst);
                Ok(Completion::Done)
            }));
        }
        assert_eq!(counter.load(Ordering::SeqCst), 3);
        drop(queues);
        assert_eq!(
            ONE_PLACE.taken.load(Ordering::SeqCst),
            0,
            "a queue gives its place back when it ends"
        );
    }

    #[test]
    fn a_polling_worker_watches_a_cache_line_that_a_push_does_not_otherwise_write() {
        let inbox = Inbox::default();
        let line = |address: usize| address / 128;
        let start = |field: *const u8| field as usize;
        let polled = start((&inbox.polled as *const CacheLine<Polled>).cast());
        assert_eq!(polled % 128, 0);
        assert_eq!(std::mem::size_of::<CacheLine<Polled>>(), 128);
        let lock = start((&inbox.pending as *const Mutex<Pending>).cast());
        let lock_end = lock + std::mem::size_of::<Mutex<Pending>>() - 1;
        let sleeping = start((&inbox.sleeping as *const AtomicBool).cast());
        for other in [lock, lock_end, sleeping] {
            assert_ne!(
                line(other),
                line(polled),
                "the lock, the list or `sleeping` share the polled line"
            );
        }
    }

    #[test]
    fn idle_queues_poll_longer_while_an_executor_waits_for_a_peer() {
        static PEER_WAIT: IdlePollers = IdlePollers {
            limit: AtomicUsize::new(1),
            taken: AtomicUsize::new(0),
            executors_awaiting_peers: AtomicUsize::new(0),
            peer_wait_poll: Duration::from_secs(60),
        };
        let queue = ThreadQueue::with_pollers(
            "celerity-test-peer-wait",
            Duration::from_micros(20),
            &PEER_WAIT,
        )
        .unwrap();
        let parks_soon = || {
            let deadline = Instant::now() + Duration::from_secs(30);
            while !queue.inbox.sleeping.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            queue.inbox.sleeping.load(Ordering::SeqCst)
        };
        wait(&queue.submit(|| Ok(Completion::Done)));
        assert!(
            parks_soon(),
            "with no peer awaited the queue parks after its brief poll"
        );

        PEER_WAIT.set_awaiting_peers(true);
        wait(&queue.submit(|| Ok(Completion::Done)));
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !queue.inbox.sleeping.load(Ordering::SeqCst),
            "while a peer is awaited the queue polls far past its 20 µs"
        );
        PEER_WAIT.set_awaiting_peers(false);
        assert!(parks_soon(), "once no peer is awaited it parks");
        drop(queue);
        assert_eq!(PEER_WAIT.taken.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn drop_finishes_queued_jobs() {
        let counter = Arc::new(AtomicUsize::new(0));
        {
            let queue = ThreadQueue::new("celerity-test-drop").unwrap();
            for _ in 0..10 {
                let c = counter.clone();
                queue.submit(move || {
                    c.fetch_add(1, Ordering::SeqCst);
                    Ok(Completion::Done)
                });
            }
        }
        assert_eq!(counter.load(Ordering::SeqCst), 10);
    }

    #[test]
    fn held_jobs_run_once_the_lane_is_woken() {
        let mut lanes = Lanes::new("celerity-test-held");
        let first = lanes.submit(0, || Ok(Completion::Done));
        wait(&first);
        // Let the lane fall asleep, then hand it two jobs with one wake-up.
        std::thread::sleep(std::time::Duration::from_millis(20));
        lanes.hold_wakeups();
        let counter = Arc::new(AtomicUsize::new(0));
        let events: Vec<_> = (0..2)
            .map(|_| {
                let c = counter.clone();
                lanes.submit(0, move || {
                    c.fetch_add(1, Ordering::SeqCst);
                    Ok(Completion::Done)
                })
            })
            .collect();
        lanes.wake();
        events.iter().for_each(wait);
        assert_eq!(counter.load(Ordering::SeqCst), 2);
    }
}
