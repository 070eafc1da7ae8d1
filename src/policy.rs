//! Policy vocabulary every stage shares: how loudly to log, how far the scheduler looks ahead,
//! what to do about suspicious access patterns and how to write graphs. C++ Celerity keeps these
//! beside its ids in `types.h`; here they sit on the ground floor so that the task, command and
//! instruction generators, the scheduler and the debug output can take them without importing
//! the runtime's configuration parser (`runtime::config` re-exports them).

/// Verbosity of the runtime's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Everything, including per-instruction events.
    Trace,
    /// Details useful when debugging the runtime.
    Debug,
    /// Normal operation (the default).
    Info,
    /// Suspicious behaviour.
    Warn,
    /// Errors only.
    Err,
    /// Nothing.
    Off,
}

/// How far ahead the scheduler looks before compiling commands into instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookahead {
    /// Compile every command immediately.
    None,
    /// Hold back allocating commands until two horizons have passed (Celerity's default).
    Auto,
    /// Hold back until a flush, fence or epoch.
    Infinite,
}

/// On how many threads the scheduler builds the command and instruction graphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerThreads {
    /// Two for a dry run on a host with more than 4 cores and for a run on one emulated host
    /// device in a process with more than 5 cores to itself; otherwise one.
    Auto,
    /// Both graphs on one thread (C++ Celerity's way).
    One,
    /// The command graph on one thread, the instruction graph on another.
    Two,
}

/// What to do when a program reads uninitialised data or writes overlapping regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorPolicy {
    /// Do not check.
    Ignore,
    /// Log a warning.
    Log,
    /// Fail with `CELERITY_ERROR_ACCESS_PATTERN`.
    Error,
}

/// Output format of the graphs written with `print_graphs=on`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    /// Graphviz.
    Dot,
    /// JSON nodes and edges for users' own tools.
    Json,
}
