//! Trivial graphs, side effects, collective groups, fences, horizons, epochs, error policies and
//! splitting (Celerity's `instruction_graph_misc_tests.cc`).

use super::*;
use crate::task::RangeMapper;
use crate::types::CollectiveGroupId;

#[test]
fn command_group_without_data_access_is_a_trivial_graph() {
    let mut ctx = Ctx::new(1);
    ctx.device(&[256], CommandGroup::new());
    ctx.finish();
    let kinds: Vec<_> = ctx.all().iter().map(|r| r.kind().name()).collect();
    assert_eq!(kinds, vec!["epoch", "device kernel", "epoch"]);
    let k = ctx.select(is_kernel)[0];
    assert_eq!(
        k.origin_of(InstructionId(0)),
        Some(DependencyOrigin::LastEpoch)
    );
    let last = ctx.all().last().unwrap();
    assert_eq!(
        last.origin_of(k.id()),
        Some(DependencyOrigin::ExecutionFront)
    );
}

#[test]
fn side_effects_serialize_host_tasks_per_object() {
    let mut ctx = Ctx::new(1);
    let ho1 = ctx.host_object(true);
    let ho2 = ctx.host_object(true);
    ctx.submit(TaskSpec::MasterNode, CommandGroup::new().side_effect(ho1));
    ctx.submit(TaskSpec::MasterNode, CommandGroup::new().side_effect(ho2));
    ctx.submit(
        TaskSpec::MasterNode,
        CommandGroup::new().side_effect(ho1).side_effect(ho2),
    );
    ctx.destroy_host_object(ho1);
    let t = ctx.select(is_host_task);
    assert!(ctx.concurrent(t[0].id(), t[1].id()));
    assert_eq!(
        t[2].origin_of(t[0].id()),
        Some(DependencyOrigin::SideEffect)
    );
    assert_eq!(
        t[2].origin_of(t[1].id()),
        Some(DependencyOrigin::SideEffect)
    );
    let destroy = ctx.select(|k| matches!(k, InstructionKind::DestroyHostObject { .. }));
    assert_eq!(destroy.len(), 1);
    assert!(destroy[0].depends_on(t[2].id()));
}

#[test]
fn non_owning_host_objects_are_not_destroyed() {
    let mut ctx = Ctx::new(1);
    let ho = ctx.host_object(false);
    ctx.submit(TaskSpec::MasterNode, CommandGroup::new().side_effect(ho));
    ctx.destroy_host_object(ho);
    assert!(
        ctx.select(|k| matches!(k, InstructionKind::DestroyHostObject { .. }))
            .is_empty()
    );
}

#[test]
fn collective_groups_follow_one_total_order() {
    let mut ctx = Ctx::builder().nodes(2).build();
    let g1 = CollectiveGroupId(2);
    let g2 = CollectiveGroupId(3);
    ctx.submit(TaskSpec::Collective(g1), CommandGroup::new());
    ctx.submit(TaskSpec::Collective(g2), CommandGroup::new());
    ctx.submit(TaskSpec::Collective(g1), CommandGroup::new());
    let clones = ctx.select(|k| matches!(k, InstructionKind::CloneCollectiveGroup { .. }));
    assert_eq!(clones.len(), 2, "one clone per group");
    assert_eq!(
        clones[0].origin_of(InstructionId(0)),
        Some(DependencyOrigin::CollectiveGroupOrder)
    );
    assert_eq!(
        clones[1].origin_of(clones[0].id()),
        Some(DependencyOrigin::CollectiveGroupOrder)
    );
    let t = ctx.select(is_host_task);
    assert!(t[0].depends_on(clones[0].id()));
    assert!(t[1].depends_on(clones[1].id()));
    assert!(t[2].depends_on(t[0].id()));
    assert!(ctx.concurrent(t[1].id(), t[2].id()));
    let InstructionKind::HostTask {
        collective_group, ..
    } = t[2].kind()
    else {
        unreachable!()
    };
    assert_eq!(*collective_group, g1);
}

#[test]
fn buffer_fences_export_data_to_user_memory() {
    for devices in [1, 2] {
        let mut ctx = Ctx::new(devices);
        let buf = ctx.buffer(&[256], false);
        ctx.device(
            &[256],
            CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
        );
        let (_, user) = ctx.fence_buffer(buf, Some(sr([64, 0, 0], [128, 1, 1])));
        let fence = ctx.select(|k| matches!(k, InstructionKind::Fence { .. }));
        assert_eq!(fence.len(), 1);
        let export = ctx.get(fence[0].instruction.dependencies()[0]);
        let InstructionKind::Copy {
            dest,
            dest_layout,
            region,
            ..
        } = export.kind()
        else {
            panic!("fence after a copy")
        };
        assert_eq!(*dest, user);
        assert_eq!(
            *dest_layout,
            CopyLayout::Strided {
                allocation: gbox([64, 0, 0], [192, 1, 1])
            }
        );
        assert_eq!(
            *region,
            crate::grid::Region::from(gbox([64, 0, 0], [192, 1, 1]))
        );
        assert_eq!(copy_info(export).3, CopyOrigin::Fence);
    }
}

#[test]
fn fences_copy_straight_out_of_device_memory_where_user_memory_is_its_copy_peer() {
    // One device holds the box: one copy device → user, no host allocation. Two devices each
    // hold half: no single source, so the host-memory path stays.
    for (devices, direct) in [(1, true), (2, false)] {
        let mut ctx = Ctx::builder()
            .devices(devices)
            .user_memory_peers(true)
            .build();
        let buf = ctx.buffer(&[256], false);
        ctx.device(
            &[256],
            CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
        );
        let (_, user) = ctx.fence_buffer(buf, None);
        let fence = ctx.select(|k| matches!(k, InstructionKind::Fence { .. }))[0];
        let export = ctx.get(fence.instruction.dependencies()[0]);
        let InstructionKind::Copy { source, dest, .. } = export.kind() else {
            panic!("fence after a copy")
        };
        assert_eq!(*dest, user);
        let host_allocs = ctx
            .select(is_alloc)
            .iter()
            .filter(|a| alloc_info(a).0 == MemoryId::HOST)
            .count();
        if direct {
            assert_eq!(source.memory(), mem(2), "from the device memory");
            assert_eq!(host_allocs, 0);
            assert!(export.depends_on(ctx.select(is_kernel)[0].id()));
        } else {
            assert_eq!(source.memory(), MemoryId::HOST);
            assert_eq!(host_allocs, 1);
        }
    }
}

#[test]
fn empty_buffer_fences_depend_on_the_epoch() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.fence_buffer(buf, Some(sr([0, 0, 0], [0, 1, 1])));
    let fence = ctx.select(|k| matches!(k, InstructionKind::Fence { .. }))[0];
    assert_eq!(
        fence.origin_of(InstructionId(0)),
        Some(DependencyOrigin::LastEpoch)
    );
    assert!(ctx.select(is_copy).is_empty());
}

#[test]
fn fence_user_allocations_become_garbage_of_the_next_horizon_or_epoch() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], true);
    let (_, user) = ctx.fence_buffer(buf, None);
    ctx.finish();
    let InstructionKind::Epoch { garbage, .. } = ctx.all().last().unwrap().kind() else {
        unreachable!()
    };
    assert_eq!(garbage.user_allocations, vec![user]);
}

#[test]
fn destroyed_buffers_release_user_allocations_and_free_the_rest() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], true);
    ctx.device(
        &[256],
        CommandGroup::new().read_write(buf, RangeMapper::OneToOne),
    );
    ctx.destroy_buffer(buf);
    ctx.finish();
    let frees = ctx.select(is_free);
    assert!(frees.iter().any(|f| matches!(
        f.detail,
        RecordDetail::Free {
            buffer: Some(_),
            ..
        }
    )));
    let InstructionKind::Epoch { garbage, .. } = ctx.all().last().unwrap().kind() else {
        unreachable!()
    };
    assert_eq!(
        garbage.user_allocations,
        vec![AllocationId::new(MemoryId::USER, 1)]
    );
    // every buffer allocation was freed
    assert_eq!(ctx.select(is_alloc).len(), frees.len());
}

#[test]
fn host_object_fences_serialize_on_side_effects() {
    let mut ctx = Ctx::new(1);
    let ho = ctx.host_object(true);
    ctx.submit(TaskSpec::MasterNode, CommandGroup::new().side_effect(ho));
    ctx.fence_host_object(ho);
    ctx.submit(TaskSpec::MasterNode, CommandGroup::new().side_effect(ho));
    let t = ctx.select(is_host_task);
    let fence = ctx.select(|k| matches!(k, InstructionKind::Fence { .. }))[0];
    assert_eq!(
        fence.origin_of(t[0].id()),
        Some(DependencyOrigin::SideEffect)
    );
    assert_eq!(
        t[1].origin_of(fence.id()),
        Some(DependencyOrigin::SideEffect)
    );
}

#[test]
fn epochs_serialize_and_compact_tracking() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    ctx.epoch(EpochAction::Barrier);
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    let epoch = ctx.select(is_epoch)[1];
    let k = ctx.select(is_kernel);
    assert!(epoch.depends_on(k[0].id()));
    assert_eq!(
        k[1].instruction.dependencies(),
        &[epoch.id()],
        "the reader depends on the epoch only"
    );
    let InstructionKind::Epoch { action, .. } = epoch.kind() else {
        unreachable!()
    };
    assert_eq!(*action, EpochAction::Barrier);
}

#[test]
fn horizons_serialize_and_compact_tracking_one_horizon_late() {
    let mut ctx = Ctx::builder().horizon_step(1).build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    ctx.device(
        &[256],
        CommandGroup::new().read_write(buf, RangeMapper::OneToOne),
    );
    ctx.device(
        &[256],
        CommandGroup::new().read_write(buf, RangeMapper::OneToOne),
    );
    let other = ctx.buffer(&[16], false);
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(other, RangeMapper::All),
    );
    let horizons = ctx.select(is_horizon);
    assert!(horizons.len() >= 2);
    let k = ctx.select(is_kernel);
    assert!(horizons[0].depends_on(k[0].id()));
    // after the second horizon, the first one is the effective epoch: new allocations anchor on it
    assert_eq!(
        horizons[1].instruction.dependencies(),
        &[horizons[0].id(), k[1].id()]
    );
    let alloc = ctx.select(is_alloc).last().copied().unwrap();
    assert!(horizons.iter().any(|h| alloc.depends_on(h.id())));
}

#[test]
fn uninitialized_reads_are_errors_under_the_strict_policy() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    assert_eq!(ctx.errors.len(), 1);
    assert_eq!(ctx.errors[0].kind(), crate::ErrorKind::AccessPattern);
    assert!(
        ctx.errors[0]
            .message()
            .contains("neither found locally nor has been await-pushed")
    );
}

#[test]
fn an_uninitialized_read_of_allocated_memory_on_several_devices_is_one_report() {
    // the second read finds the buffer allocated on all four devices (the shortcut for backed
    // buffers) and still uninitialised: one report naming the whole region, as for the first
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[256], false);
    for _ in 0..2 {
        ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    }
    assert_eq!(ctx.errors.len(), 2, "{:?}", ctx.errors);
    for e in &ctx.errors {
        assert_eq!(e.kind(), crate::ErrorKind::AccessPattern);
        assert!(e.message().contains("B0 {[0,256)}"), "{}", e.message());
    }
    assert_eq!(ctx.select(is_kernel).len(), 8);
}

#[test]
fn uninitialized_reads_are_tolerated_when_ignored() {
    let mut ctx = Ctx::builder().policies(Policies::ignore_all()).build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    ctx.finish();
    assert!(ctx.errors.is_empty());
    assert_eq!(ctx.select(is_kernel).len(), 1);
}

#[test]
fn overlapping_writes_are_errors_under_the_strict_policy() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::All),
    );
    assert_eq!(ctx.errors.len(), 1);
    assert!(ctx.errors[0].message().contains("overlapping writes"));
}

/// A mapper of 1-d chunks of `[0, 256)`: `[o, o + r)` maps to `[f(o), f(o) + len(r))`.
fn mapped_1d(f: impl Fn(usize, usize) -> (usize, usize) + Send + Sync + 'static) -> RangeMapper {
    RangeMapper::Custom(Arc::new(move |ck: &crate::task::Chunk, _, _| {
        let (offset, len) = f(ck.offset[0], ck.range[0]);
        Subrange::new(Id::new(offset, 0, 0), Range::new(len, 1, 1))
    }))
}

#[test]
fn overlapping_writes_of_several_chunk_pairs_are_reported_exactly() {
    // on four devices, chunk [o, o + 64) writes [o, o + 128) clipped to the buffer: every chunk
    // overlaps the next, and the report names the union of all overlaps
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[256], false);
    let spill = mapped_1d(|o, r| (o, (2 * r).min(256 - o)));
    ctx.device(&[256], CommandGroup::new().discard_write(buf, spill));
    assert_eq!(ctx.errors.len(), 1, "{:?}", ctx.errors);
    let message = ctx.errors[0].message();
    assert!(message.contains("overlapping writes"), "{message}");
    assert!(message.contains("B0 {[64,256)}"), "{message}");
}

#[test]
fn interleaved_writes_whose_bounds_intersect_are_no_overlap() {
    // chunk [o, o + 64) writes [o/2, o/2 + 32) and [128 + o/2, 128 + o/2 + 32): the chunks'
    // bounding boxes intersect, their writes do not
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[256], false);
    let low = mapped_1d(|o, r| (o / 2, r / 2));
    let high = mapped_1d(|o, r| (128 + o / 2, r / 2));
    ctx.device(
        &[256],
        CommandGroup::new()
            .discard_write(buf, low)
            .discard_write(buf, high),
    );
    assert!(ctx.errors.is_empty(), "{:?}", ctx.errors);
    assert_eq!(ctx.select(is_kernel).len(), 4);
}

/// On `ctx`'s one device: a kernel split into two chunks that write `buf` through `write`, then
/// a kernel that reads element 200; the three kernel instructions.
fn two_writing_chunks_then_a_reader(ctx: &mut Ctx, write: RangeMapper) -> Vec<InstructionId> {
    let buf = ctx.buffer(&[256], false);
    let two_chunks = CommandGroup::new().discard_write(buf, write);
    ctx.device(&[256], two_chunks.hint_oversubscribe(2));
    let element_200 = mapped_1d(|_, _| (200, 1));
    ctx.device(&[1], CommandGroup::new().read(buf, element_200));
    ctx.select(is_kernel).iter().map(|k| k.id()).collect()
}

#[test]
fn a_later_reader_waits_for_every_chunk_that_wrote_the_same_elements() {
    // both chunks write the whole buffer (overlap ignored): each is a writer of every element
    let mut ctx = Ctx::builder()
        .devices(1)
        .policies(Policies::ignore_all())
        .build();
    let k = two_writing_chunks_then_a_reader(&mut ctx, RangeMapper::All);
    assert_eq!(k.len(), 3);
    assert!(ctx.concurrent(k[0], k[1]));
    assert!(ctx.get(k[2]).depends_on(k[0]) && ctx.get(k[2]).depends_on(k[1]));
}

#[test]
fn a_later_reader_waits_only_for_the_chunk_that_wrote_its_part() {
    // the chunks write disjoint halves: element 200 is the second chunk's
    let mut ctx = Ctx::new(1);
    let k = two_writing_chunks_then_a_reader(&mut ctx, RangeMapper::OneToOne);
    assert_eq!(k.len(), 3);
    assert!(ctx.get(k[2]).depends_on(k[1]));
    assert!(ctx.concurrent(k[2], k[0]));
}

#[test]
fn overlapping_writes_are_tolerated_when_ignored() {
    let mut ctx = Ctx::builder()
        .devices(2)
        .policies(Policies::ignore_all())
        .build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::All),
    );
    ctx.host(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    assert!(ctx.errors.is_empty());
    // the last racing writer counts as the original writer
    let k = ctx.select(is_kernel);
    let ht = ctx.select(is_host_task)[0];
    assert!(ctx.depends_transitively(ht.id(), k[1].id()));
}

#[test]
fn split_2d_hint_splits_in_two_dimensions() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[128, 128], false);
    ctx.device(
        &[128, 128],
        CommandGroup::new()
            .discard_write(buf, RangeMapper::OneToOne)
            .hint_split_2d(),
    );
    let boxes: Vec<_> = ctx
        .select(is_kernel)
        .iter()
        .map(|k| match k.kind() {
            InstructionKind::DeviceKernel { execution_box, .. } => *execution_box,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        boxes,
        vec![
            gbox([0, 0, 0], [64, 64, 1]),
            gbox([0, 64, 0], [64, 128, 1]),
            gbox([64, 0, 0], [128, 64, 1]),
            gbox([64, 64, 0], [128, 128, 1])
        ]
    );
}

#[test]
fn oversubscription_splits_local_chunks_recursively() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new()
            .discard_write(buf, RangeMapper::OneToOne)
            .hint_oversubscribe(2),
    );
    let k = ctx.select(is_kernel);
    assert_eq!(k.len(), 4);
    let devices: Vec<_> = k
        .iter()
        .map(|k| match k.kind() {
            InstructionKind::DeviceKernel { device, .. } => device.0,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(devices, vec![0, 0, 1, 1]);
    assert_eq!(ctx.select(is_alloc).len(), 2, "one allocation per device");
}

#[test]
fn unsafe_oversubscription_is_refused() {
    let mut ctx = Ctx::new(2);
    let ho = ctx.host_object(true);
    ctx.submit(
        TaskSpec::host(1, crate::grid::Range::from_slice(&[256])),
        CommandGroup::new().side_effect(ho).hint_oversubscribe(2),
    );
    assert_eq!(ctx.errors.len(), 1);
    assert!(
        ctx.errors[0]
            .message()
            .contains("because it has side effects")
    );
    assert_eq!(ctx.select(is_host_task).len(), 1);

    let mut lenient = Ctx::builder()
        .devices(2)
        .policies(Policies::ignore_all())
        .build();
    let ho = lenient.host_object(true);
    lenient.submit(
        TaskSpec::host(1, crate::grid::Range::from_slice(&[256])),
        CommandGroup::new().side_effect(ho).hint_oversubscribe(2),
    );
    assert!(lenient.errors.is_empty());
    assert_eq!(lenient.select(is_host_task).len(), 1);
}

#[test]
fn shutdown_frees_everything_that_was_allocated() {
    let mut ctx = Ctx::builder().devices(2).peer_copies(false).build();
    let a = ctx.buffer(&[128, 128], true);
    let b = ctx.buffer(&[128, 128], false);
    ctx.device(
        &[128, 128],
        CommandGroup::new()
            .read(a, RangeMapper::All)
            .discard_write(b, RangeMapper::OneToOne),
    );
    ctx.host(&[128, 128], CommandGroup::new().read(b, RangeMapper::All));
    ctx.destroy_buffer(a);
    ctx.destroy_buffer(b);
    ctx.finish();
    let allocated: std::collections::BTreeSet<_> = ctx
        .select(is_alloc)
        .iter()
        .map(|r| match r.kind() {
            InstructionKind::Alloc { allocation, .. } => *allocation,
            _ => unreachable!(),
        })
        .collect();
    let freed: std::collections::BTreeSet<_> = ctx
        .select(is_free)
        .iter()
        .map(|r| match r.kind() {
            InstructionKind::Free { allocation } => *allocation,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(allocated, freed);
    // every free comes after every use of its allocation
    for f in ctx.select(is_free) {
        let InstructionKind::Free { allocation } = f.kind() else {
            unreachable!()
        };
        for user in ctx.all() {
            let uses = match user.kind() {
                InstructionKind::Copy { source, dest, .. } => {
                    source == allocation || dest == allocation
                }
                InstructionKind::DeviceKernel { accesses, .. }
                | InstructionKind::HostTask { accesses, .. } => {
                    accesses.iter().any(|x| x.allocation == *allocation)
                }
                _ => false,
            };
            if uses {
                assert!(
                    ctx.depends_transitively(f.id(), user.id()),
                    "{} frees before {} uses",
                    f.id(),
                    user.id()
                );
            }
        }
    }
}

#[test]
fn generation_is_deterministic() {
    let build = || {
        let mut ctx = Ctx::builder()
            .nodes(2)
            .devices(3)
            .peer_copies(false)
            .build();
        let buf = ctx.buffer(&[64, 64], true);
        for _ in 0..3 {
            ctx.device(
                &[64, 64],
                CommandGroup::new()
                    .read_write(buf, RangeMapper::OneToOne)
                    .read(buf, RangeMapper::All),
            );
        }
        ctx.finish();
        ctx.dump()
    };
    assert_eq!(build(), build());
}

/// Device and execution box of every device kernel, in creation order.
fn kernel_chunks(ctx: &Ctx) -> Vec<(u64, crate::grid::GridBox)> {
    ctx.select(is_kernel)
        .iter()
        .map(|k| match k.kind() {
            InstructionKind::DeviceKernel {
                device,
                execution_box,
                ..
            } => (device.0, *execution_box),
            _ => unreachable!(),
        })
        .collect()
}

#[test]
fn lookahead_compiles_the_chunks_it_anticipated() {
    // with lookahead, a chained task's split is made once, when its command is anticipated, and
    // compiled from there: the same chunks on the same devices as without lookahead
    let chunks_with = |lookahead| {
        let mut ctx = Ctx::builder().devices(4).lookahead(lookahead).build();
        let buf = ctx.buffer(&[256], true);
        for _ in 0..3 {
            ctx.device(
                &[256],
                CommandGroup::new().read_write(buf, RangeMapper::OneToOne),
            );
        }
        ctx.finish();
        assert!(ctx.errors.is_empty(), "{:?}", ctx.errors);
        kernel_chunks(&ctx)
    };
    let plain = chunks_with(Lookahead::None);
    assert_eq!(plain.len(), 12);
    let quarter = |i: usize| gbox([64 * i, 0, 0], [64 * (i + 1), 1, 1]);
    assert_eq!(
        &plain[..4],
        &(0..4).map(|i| (i as u64, quarter(i))).collect::<Vec<_>>()[..]
    );
    assert_eq!(chunks_with(Lookahead::Auto), plain);
    assert_eq!(chunks_with(Lookahead::Infinite), plain);
}

#[test]
fn refused_oversubscription_is_reported_under_lookahead() {
    // the anticipated split of a task whose hint is refused is not kept: the compilation's own
    // split reports the refusal
    let mut ctx = Ctx::builder().devices(2).lookahead(Lookahead::Auto).build();
    let buf = ctx.buffer(&[1], false);
    ctx.device(
        &[256],
        CommandGroup::new()
            .reduction(crate::types::ReductionId(1), buf, true)
            .hint_oversubscribe(2),
    );
    ctx.finish();
    assert_eq!(ctx.errors.len(), 1, "{:?}", ctx.errors);
    assert!(
        ctx.errors[0]
            .message()
            .contains("because it performs a reduction"),
        "{}",
        ctx.errors[0].message()
    );
    assert_eq!(ctx.select(is_kernel).len(), 2);
}
