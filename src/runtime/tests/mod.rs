//! Runtime tests: the whole pipeline on one process (`pipeline`), graph, trace and stall
//! output (`observability`), and the panic guards of the runtime's threads (`thread_guard`).

mod observability;
mod pipeline;
mod thread_guard;
