//! Local and global reductions (Celerity's `instruction_graph_reduction_tests.cc`).

use super::*;
use crate::task::RangeMapper;
use crate::types::ReductionId;

const RID: ReductionId = ReductionId(1);

fn reduce_kernel(ctx: &mut Ctx, buf: BufferId, initialize_to_identity: bool) {
    ctx.device(
        &[256],
        CommandGroup::new().reduction(RID, buf, initialize_to_identity),
    );
}

fn read_result(ctx: &mut Ctx, buf: BufferId) {
    ctx.submit(
        TaskSpec::MasterNode,
        CommandGroup::new().read(buf, RangeMapper::All),
    );
}

fn reduces(ctx: &Ctx) -> Vec<(ReductionScope, usize)> {
    ctx.select(|k| matches!(k, InstructionKind::Reduce { .. }))
        .iter()
        .map(|r| match (r.kind(), &r.detail) {
            (
                InstructionKind::Reduce {
                    num_source_values, ..
                },
                RecordDetail::Reduce { scope, .. },
            ) => (*scope, *num_source_values),
            _ => unreachable!(),
        })
        .collect()
}

#[test]
fn single_node_single_device_reduction_is_a_write() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[], false);
    reduce_kernel(&mut ctx, buf, true);
    read_result(&mut ctx, buf);
    assert!(reduces(&ctx).is_empty());
    let k = ctx.select(is_kernel)[0];
    let InstructionKind::DeviceKernel { reductions, .. } = k.kind() else {
        unreachable!()
    };
    assert_eq!(reductions.len(), 1);
    assert_eq!(reductions[0].accessed_box, crate::grid::GridBox::UNIT);
    // the host reader gets the result through a coherence copy
    assert_eq!(ctx.select(is_copy).len(), 1);
}

#[test]
fn single_device_reduction_includes_the_initial_value() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[], true);
    reduce_kernel(&mut ctx, buf, false);
    assert_eq!(reduces(&ctx), vec![(ReductionScope::Local, 2)]);
    let gathers: Vec<_> = ctx
        .select(is_copy)
        .into_iter()
        .filter(|c| copy_info(c).3 == CopyOrigin::Gather)
        .collect();
    assert_eq!(
        gathers.len(),
        2,
        "current value and the kernel's partial result"
    );
    let reduce = ctx.select(|k| matches!(k, InstructionKind::Reduce { .. }))[0];
    assert!(gathers.iter().all(|g| reduce.depends_on(g.id())));
    let InstructionKind::Copy { dest_layout, .. } = gathers[0].kind() else {
        unreachable!()
    };
    assert_eq!(
        *dest_layout,
        CopyLayout::Linearized { offset_bytes: 0 },
        "the old value goes first"
    );
}

#[test]
fn multi_device_reduction_is_local_only() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[], false);
    reduce_kernel(&mut ctx, buf, true);
    read_result(&mut ctx, buf);
    assert_eq!(reduces(&ctx), vec![(ReductionScope::Local, 4)]);
    let gather_allocs = ctx
        .select(is_alloc)
        .into_iter()
        .filter(|a| {
            matches!(
                a.detail,
                RecordDetail::Alloc {
                    origin: AllocOrigin::Gather,
                    num_chunks: Some(4),
                    ..
                }
            )
        })
        .count();
    assert_eq!(gather_allocs, 1);
    let reduce = ctx.select(|k| matches!(k, InstructionKind::Reduce { .. }))[0];
    let free = ctx
        .successors(reduce.id())
        .into_iter()
        .find(|s| is_free(s.kind()))
        .expect("gather space freed");
    assert_eq!(
        free.origin_of(reduce.id()),
        Some(DependencyOrigin::AllocationLifetime)
    );
    // the host reader reads the reduce's result without another copy
    let reader = ctx.select(is_host_task)[0];
    assert!(reader.depends_on(reduce.id()));
}

#[test]
fn multi_node_single_device_reduction_is_global_only() {
    for local in [0, 1] {
        let mut ctx = Ctx::builder().nodes(2).local(local).build();
        let buf = ctx.buffer(&[], false);
        ctx.device(&[256], CommandGroup::new().reduction(RID, buf, true));
        ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::All));
        assert_eq!(reduces(&ctx), vec![(ReductionScope::Global, 2)]);
        assert_eq!(
            ctx.select(|k| matches!(k, InstructionKind::FillIdentity { .. }))
                .len(),
            1
        );
        let gather = ctx.select(|k| matches!(k, InstructionKind::GatherReceive { .. }));
        assert_eq!(gather.len(), 1);
        let local_copy: Vec<_> = ctx
            .select(is_copy)
            .into_iter()
            .filter(|c| copy_info(c).3 == CopyOrigin::Gather)
            .collect();
        assert_eq!(local_copy.len(), 1);
        let InstructionKind::Copy { dest_layout, .. } = local_copy[0].kind() else {
            unreachable!()
        };
        assert_eq!(
            *dest_layout,
            CopyLayout::Linearized {
                offset_bytes: local as usize * 4
            }
        );
        // partial result pushed to the peer
        assert_eq!(ctx.select(is_send).len(), 1);
    }
}

#[test]
fn multi_node_multi_device_reduction_is_local_then_global() {
    let mut ctx = Ctx::builder().nodes(2).devices(2).build();
    let buf = ctx.buffer(&[], false);
    ctx.device(&[256], CommandGroup::new().reduction(RID, buf, true));
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    assert_eq!(
        reduces(&ctx),
        vec![(ReductionScope::Local, 2), (ReductionScope::Global, 2)]
    );
}

#[test]
fn only_node_0_includes_the_current_value() {
    for local in [0, 1] {
        let mut ctx = Ctx::builder().nodes(2).local(local).build();
        let buf = ctx.buffer(&[], true);
        ctx.device(&[256], CommandGroup::new().reduction(RID, buf, false));
        ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::All));
        let expected = if local == 0 {
            vec![(ReductionScope::Local, 2), (ReductionScope::Global, 2)]
        } else {
            vec![(ReductionScope::Global, 2)]
        };
        assert_eq!(reduces(&ctx), expected);
    }
}

#[test]
fn initial_value_from_a_non_local_buffer_version() {
    let mut ctx = Ctx::builder().nodes(2).build();
    let buf = ctx.buffer(&[], false);
    // node 1 writes the value, node 0 must receive it before including it
    ctx.submit(
        TaskSpec::host(1, Range::from_slice(&[2])),
        CommandGroup::new().discard_write(
            buf,
            RangeMapper::Custom(Arc::new(|ck: &crate::task::Chunk, _, _| {
                let n = usize::from(ck.offset[0] + ck.range[0] > 1);
                Subrange::new(Id::ZERO, Range::new(n, 1, 1))
            })),
        ),
    );
    ctx.device(&[256], CommandGroup::new().reduction(RID, buf, false));
    let recv = ctx.select(is_receive);
    assert_eq!(recv.len(), 1, "{}", ctx.dump());
    let gather_copy = ctx
        .select(is_copy)
        .into_iter()
        .find(|c| copy_info(c).3 == CopyOrigin::Gather)
        .expect("current value gathered");
    assert!(ctx.depends_transitively(gather_copy.id(), recv[0].id()));
}

#[test]
fn local_reductions_include_only_participating_devices() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[], false);
    // 2 items on 4 devices: only 2 chunks
    ctx.device(&[2], CommandGroup::new().reduction(RID, buf, true));
    assert_eq!(ctx.select(is_kernel).len(), 2);
    assert_eq!(reduces(&ctx), vec![(ReductionScope::Local, 2)]);
}

#[test]
fn global_reduction_without_local_contribution_reads_no_stale_value() {
    let mut ctx = Ctx::builder().nodes(3).local(2).build();
    let buf = ctx.buffer(&[], false);
    // two items on three nodes: node 2 does not contribute
    ctx.device(&[2], CommandGroup::new().reduction(RID, buf, true));
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    assert_eq!(
        reduces(&ctx),
        vec![(ReductionScope::Global, 3)],
        "{}",
        ctx.dump()
    );
    assert!(
        ctx.select(is_copy)
            .iter()
            .all(|c| copy_info(c).3 != CopyOrigin::Gather)
    );
    // the non-contributing node announces that with an empty pilot
    let empty = ctx
        .recorder()
        .pilots()
        .iter()
        .filter(|p| p.message.region_box.is_empty())
        .count();
    assert_eq!(empty, 2);
}

#[test]
fn horizons_and_epochs_report_completed_reductions() {
    let mut ctx = Ctx::builder().nodes(2).build();
    let buf = ctx.buffer(&[], false);
    ctx.device(&[256], CommandGroup::new().reduction(RID, buf, true));
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    ctx.finish();
    let reported: Vec<ReductionId> =
        ctx.all()
            .iter()
            .flat_map(|r| match r.kind() {
                InstructionKind::Horizon { garbage, .. }
                | InstructionKind::Epoch { garbage, .. } => garbage.reductions.clone(),
                _ => Vec::new(),
            })
            .collect();
    assert_eq!(reported, vec![RID]);
}
