//! Runtime tests: the whole pipeline on one process (`pipeline`), where copies run (`copies`),
//! graph, trace and stall output (`observability`), faults across in-process nodes (`faults`), and the panic guards of
//! the runtime's threads (`thread_guard`).

mod copies;
mod faults;
mod observability;
mod pipeline;
mod thread_guard;
