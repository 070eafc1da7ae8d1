//! The requirements a node reads for its local chunks: a chunk spanning the whole task takes the
//! task-level regions in place; they must be what evaluating the chunk's accesses gives.

use super::*;
use crate::command::assignment::{ChunkRequirements, compute_requirements, split_and_assign};
use crate::grid::RegionBuilder;

/// Per buffer: the buffer, what a chunk consumes of it and what it produces.
type Requirements = Vec<(BufferId, Region, Region)>;

/// Per accessed buffer (in order of first access): the union of what the accesses consume and
/// produce on `chunk`, each access's mapper evaluated anew.
fn evaluated(task: &Task, chunk: &GridBox) -> Requirements {
    let map = task.access_map();
    let mut out: Vec<(BufferId, RegionBuilder, RegionBuilder)> = Vec::new();
    for (i, access) in map.accesses().iter().enumerate() {
        let pos = match out.iter().position(|(b, _, _)| *b == access.bid) {
            Some(pos) => pos,
            None => {
                out.push((access.bid, RegionBuilder::new(), RegionBuilder::new()));
                out.len() - 1
            }
        };
        let region = map.requirements_for_nth_access(i, chunk);
        if access.mode.is_consumer() {
            out[pos].1.add_region(&region);
        }
        if access.mode.is_producer() {
            out[pos].2.add_region(&region);
        }
    }
    out.into_iter()
        .map(|(bid, c, p)| (bid, c.into_region(), p.into_region()))
        .collect()
}

/// The local chunks' requirements as the generator reads them.
fn local(task: &Task, nodes: usize) -> (bool, Vec<(GridBox, Requirements)>) {
    let chunks = split_and_assign(task, nodes, 1);
    let mut reqs = ChunkRequirements::default();
    compute_requirements(task, &chunks, NodeId(0), &mut reqs);
    let list = reqs
        .local_chunks(task)
        .map(|(chunk, r)| {
            let r = r.map(|(b, c, p)| (b, c.clone(), p.clone())).collect();
            (*chunk, r)
        })
        .collect();
    (reqs.is_whole_task(), list)
}

#[test]
fn a_whole_task_reads_the_regions_its_accesses_evaluate_to() {
    for nodes in [1, 2] {
        let policies = CommandPolicies {
            overlapping_write: ErrorPolicy::Ignore,
            ..CommandPolicies::default()
        };
        let mut ctx = Ctx::with_policies(nodes, ErrorPolicy::Ignore, policies);
        let a = ctx.buffer(&[16, 16], true);
        let b = ctx.buffer(&[16, 16], true);
        let transposed = custom(|c| {
            Subrange::new(
                Id::from_slice(&[c.offset[1], c.offset[0]]),
                Range::from_slice(&[c.range[1], c.range[0]]),
            )
        });
        let tid = ctx
            .device(&[16, 16])
            .read(a, transposed)
            .read_write(b, RangeMapper::OneToOne)
            .read(b, RangeMapper::Neighborhood([1, 1, 0]))
            .discard_write(a, fixed(&[2, 3], &[4, 5]))
            .submit();
        let task = Arc::clone(ctx.tm.task(tid).unwrap());
        let (whole, chunks) = local(&task, nodes);
        assert_eq!(whole, nodes == 1, "{nodes} nodes");
        assert_eq!(chunks.len(), 1);
        let (chunk, reqs) = &chunks[0];
        assert_eq!(reqs, &evaluated(&task, chunk), "{nodes} nodes");
    }
}

#[test]
fn a_task_with_a_reduction_is_evaluated_with_its_scalar() {
    let mut ctx = Ctx::new(1);
    let a = ctx.buffer(&[16], true);
    let sum = ctx.buffer(&[1], true);
    let tid = ctx
        .device(&[16])
        .read(a, RangeMapper::OneToOne)
        .reduce(sum, false)
        .submit();
    let task = Arc::clone(ctx.tm.task(tid).unwrap());
    let (whole, chunks) = local(&task, 1);
    assert!(!whole);
    let scalar = Region::from_box(crate::command::SCALAR_BOX);
    assert_eq!(
        chunks[0].1,
        vec![
            (a, Region::from_box(b1(0, 16)), Region::new()),
            (sum, Region::new(), scalar)
        ]
    );
}

/// Remote reads added out of node order (a second access visiting the nodes again, a node
/// reading a second buffer) stay one entry per node and buffer, in node order, each the union of
/// what was added for it.
#[test]
fn remote_reads_are_one_union_per_node_and_buffer_in_node_order() {
    let cell = |i: usize| Region::from_box(GridBox::from_arrays([i, 0, 0], [i + 1, 1, 1]));
    let (b0, b1) = (BufferId(0), BufferId(1));
    let mut reqs = ChunkRequirements::default();
    for (node, bid, i) in [
        (2, b0, 0),
        (1, b0, 1),
        (2, b1, 2),
        (1, b0, 3),
        (3, b0, 4),
        (2, b0, 5),
    ] {
        reqs.add_remote_read(NodeId(node), bid, cell(i));
    }
    let listed: Vec<_> = (reqs.remote_reads.iter())
        .map(|r| (r.node.0, r.bid, r.region.clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (1, b0, cell(1).union(&cell(3))),
            (2, b0, cell(0).union(&cell(5))),
            (2, b1, cell(2)),
            (3, b0, cell(4)),
        ]
    );
    assert_eq!(
        reqs.remote_readers(b0).map(|n| n.0).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert_eq!(
        reqs.remote_readers(b1).map(|n| n.0).collect::<Vec<_>>(),
        [2]
    );
}
