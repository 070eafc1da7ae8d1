//! What the runtime writes at shutdown: the task, command and instruction graphs
//! (`print_graphs=on`, gathered on node 0) and the trace (`trace_file`, one merged timeline of
//! every node).

use super::{Runtime, SchedulerOutput, clock_sync};
use crate::debug::trace::TraceLog;
use crate::error::{Error, Result};
use crate::types::TaskId;

impl Runtime {
    /// Writes the graphs (`print_graphs=on`) and the trace (`trace_file`) at shutdown.
    pub(super) fn write_observability(&mut self, output: Option<SchedulerOutput>) -> Result<()> {
        let Some(output) = output else {
            return Ok(());
        };
        let node = crate::types::NodeId(u64::from(self.info.node));
        let graphs = if self.config.print_graphs {
            self.print_graphs(&output, node)
        } else {
            Ok(())
        };
        let trace = match self.config.trace_file.clone() {
            Some(path) => {
                let mut log = self
                    .shared
                    .trace
                    .lock()
                    .take()
                    .unwrap_or_else(|| TraceLog::new(node, self.started));
                if let Some(scheduler) = output.trace {
                    log.merge(scheduler);
                }
                self.write_trace(&path, &log, node)
            }
            None => Ok(()),
        };
        graphs.and(trace)
    }

    /// Writes the trace: alone, this node's file; with several nodes, node 0 gathers every
    /// node's events onto one timeline in one file, mapping each node's clock with the offsets
    /// measured at init and now (see `clock_sync`).
    fn write_trace(
        &mut self,
        path: &std::path::Path,
        log: &TraceLog,
        node: crate::types::NodeId,
    ) -> Result<()> {
        use crate::debug::output;
        let written = match &mut self.observability_comm {
            Some(comm) if self.info.num_nodes > 1 => {
                let at_end = clock_sync::measure(comm.as_mut(), self.started)?;
                let local = output::trace_part(log);
                match comm.collective_gather_bytes(crate::types::NodeId(0), &local)? {
                    Some(parts) => {
                        let clocks: Vec<_> = match (&self.clock_at_init, &at_end) {
                            (Some(init), Some(end)) => init
                                .iter()
                                .zip(end)
                                .map(|(&a, &b)| clock_sync::clock_map(a, b))
                                .collect(),
                            _ => Vec::new(),
                        };
                        output::write_merged_trace(path, &parts, &clocks)?
                    }
                    None => return Ok(()),
                }
            }
            _ => output::write_trace(path, log, node)?,
        };
        tracing::info!("trace written to {}", written.display());
        Ok(())
    }

    fn print_graphs(&mut self, output: &SchedulerOutput, node: crate::types::NodeId) -> Result<()> {
        use crate::debug::output;
        let (Some(commands), Some(instructions), Some(tasks)) = (
            output.cdag.recorder(),
            output.idag.recorder(),
            self.task_manager.recorder(),
        ) else {
            return Err(Error::internal(
                "print_graphs is on but a recorder is missing",
            ));
        };
        // `graph_tasks` keeps large graphs readable: only the chosen tasks' records.
        let filtered = self.config.graph_tasks.map(|(first, last)| {
            let keep = move |task: TaskId| (first..=last).contains(&task.0);
            (
                tasks.filtered(keep),
                commands.filtered(keep),
                instructions.filtered(keep),
            )
        });
        let (tasks, commands, instructions) = match &filtered {
            Some((t, c, i)) => (t, c, i),
            None => (tasks, commands, instructions),
        };
        let format = self.config.graph_format;
        let local = output::command_graph_bytes(commands, format);
        let gathered = match &mut self.observability_comm {
            Some(comm) => comm.collective_gather_bytes(crate::types::NodeId(0), &local)?,
            None => Some(vec![local]),
        };
        let Some(command_graphs) = gathered else {
            // Every other node writes its own instruction graph next to node 0's files.
            let path = output::write_instruction_graph(
                &self.config.graph_dir,
                format,
                node,
                tasks,
                instructions,
            )?;
            tracing::info!("graphs written: {}", path.display());
            return Ok(());
        };
        let paths = output::write_graphs(
            &self.config.graph_dir,
            format,
            node,
            tasks,
            &command_graphs,
            instructions,
        )?;
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        tracing::info!("graphs written: {}", names.join(", "));
        Ok(())
    }
}
