//! Allocations, coherence copies and staging (Celerity's
//! `instruction_graph_memory_tests.cc`).

use super::*;
use crate::grid::{GridBox, Region};
use crate::task::RangeMapper;

fn coherence_copies(ctx: &Ctx) -> Vec<&InstructionRecord> {
    ctx.select(is_copy)
        .into_iter()
        .filter(|c| copy_info(c).3 == CopyOrigin::Coherence)
        .collect()
}

fn fixed(offset: [usize; 3], range: [usize; 3]) -> RangeMapper {
    RangeMapper::Fixed(sr(offset, range))
}

#[test]
fn empty_range_accesses_do_not_allocate_or_depend() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, fixed([0, 0, 0], [0, 1, 1])),
    );
    ctx.device(
        &[256],
        CommandGroup::new().read(buf, fixed([0, 0, 0], [0, 1, 1])),
    );
    ctx.finish();
    assert!(ctx.select(is_alloc).is_empty());
    let kernels = ctx.select(is_kernel);
    assert_eq!(kernels.len(), 2);
    assert!(ctx.concurrent(kernels[0].id(), kernels[1].id()));
    let InstructionKind::DeviceKernel { accesses, .. } = kernels[0].kind() else {
        unreachable!()
    };
    assert!(accesses[0].allocation.is_null());
}

#[test]
fn overlapping_accessors_allocate_their_bounding_box() {
    for devices in [1, 2] {
        let mut ctx = Ctx::new(devices);
        let buf = ctx.buffer(&[256], false);
        // two overlapping fixed accessors on every chunk
        ctx.device(
            &[256],
            CommandGroup::new()
                .discard_write(buf, fixed([0, 0, 0], [128, 1, 1]))
                .discard_write(buf, fixed([64, 0, 0], [128, 1, 1])),
        );
        let allocs = ctx.select(is_alloc);
        assert_eq!(allocs.len(), devices, "one allocation per device");
        for a in allocs {
            let (m, b, size) = alloc_info(a);
            assert!(m >= MemoryId::FIRST_DEVICE);
            assert_eq!(b, Some(gbox([0, 0, 0], [192, 1, 1])));
            assert_eq!(size, 192 * 4);
        }
    }
}

#[test]
fn disjoint_region_accessors_allocate_their_bounding_box() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new()
            .discard_write(buf, fixed([0, 0, 0], [32, 1, 1]))
            .discard_write(buf, fixed([224, 0, 0], [32, 1, 1])),
    );
    // one bounding box per access, not merged (they neither overlap nor touch)
    let boxes: Vec<_> = ctx
        .select(is_alloc)
        .iter()
        .map(|a| alloc_info(a).1.unwrap())
        .collect();
    assert_eq!(
        boxes,
        vec![gbox([0, 0, 0], [32, 1, 1]), gbox([224, 0, 0], [256, 1, 1])]
    );
}

#[test]
fn kernels_on_the_same_memory_depend_on_each_other() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    let k = ctx.select(is_kernel);
    assert_eq!(k.len(), 2);
    assert_eq!(
        k[1].origin_of(k[0].id()),
        Some(DependencyOrigin::ReadFromAllocation)
    );
    assert!(ctx.select(is_copy).is_empty());
}

#[test]
fn data_dependencies_across_memories_introduce_coherence_copies() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    ctx.host(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
    let copies = ctx.select(is_copy);
    assert_eq!(copies.len(), 1);
    let (s, d, region, origin) = copy_info(copies[0]);
    assert_eq!(
        (s, d, origin),
        (mem(2), MemoryId::HOST, CopyOrigin::Coherence)
    );
    assert_eq!(region, Region::from(gbox([0, 0, 0], [256, 1, 1])));
    let kernel = ctx.select(is_kernel)[0].id();
    let host_task = ctx.select(is_host_task)[0];
    assert!(copies[0].depends_on(kernel));
    assert!(host_task.depends_on(copies[0].id()));
}

#[test]
fn one_device_to_host_copy_serves_every_later_host_reader() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    ctx.host(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    ctx.host(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    // split by writer: one copy per producing device, then none for the second reader
    let copies = ctx.select(is_copy);
    assert_eq!(copies.len(), 2);
    let kernels = ctx.select(is_kernel);
    for (c, k) in copies.iter().zip(&kernels) {
        assert!(c.depends_on(k.id()));
        assert!(!c.depends_on(kernels.iter().find(|o| o.id() != k.id()).unwrap().id()));
    }
}

#[test]
fn local_copies_are_split_on_writers() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    // every device reads everything: each needs the other's half, one copy per writer
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    let copies = coherence_copies(&ctx);
    assert_eq!(copies.len(), 2, "{}", ctx.dump());
    let (s0, d0, r0, _) = copy_info(copies[0]);
    let (s1, d1, r1, _) = copy_info(copies[1]);
    assert_eq!((s0, d0), (mem(2), mem(3)));
    assert_eq!(r0, Region::from(gbox([0, 0, 0], [128, 1, 1])));
    assert_eq!((s1, d1), (mem(3), mem(2)));
    assert_eq!(r1, Region::from(gbox([128, 0, 0], [256, 1, 1])));
}

#[test]
fn oversubscribed_overlapping_reads_generate_one_copy_per_reader_set() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.host(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    ctx.device(
        &[256],
        CommandGroup::new()
            .read(buf, RangeMapper::Neighborhood([1, 0, 0]))
            .hint_oversubscribe(2),
    );
    // readers [0,129) and [127,256): copies A\B, A∩B, B\A
    let regions: Vec<Region> = ctx.select(is_copy).iter().map(|c| copy_info(c).2).collect();
    assert_eq!(regions.len(), 3);
    let total: usize = regions.iter().map(Region::area).sum();
    assert_eq!(total, 256);
    assert!(regions.contains(&Region::from(gbox([127, 0, 0], [129, 1, 1]))));
}

#[test]
fn non_overlapping_subranges_in_subsequent_kernels_allocate_separately() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, fixed([0, 0, 0], [64, 1, 1])),
    );
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, fixed([128, 0, 0], [64, 1, 1])),
    );
    let boxes: Vec<_> = ctx
        .select(is_alloc)
        .iter()
        .map(|a| alloc_info(a).1.unwrap())
        .collect();
    assert_eq!(
        boxes,
        vec![gbox([0, 0, 0], [64, 1, 1]), gbox([128, 0, 0], [192, 1, 1])]
    );
    assert!(ctx.select(is_free).is_empty());
}

#[test]
fn resize_for_discard_write_preserves_only_non_overwritten_parts() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, fixed([0, 0, 0], [128, 1, 1])),
    );
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, fixed([64, 0, 0], [192, 1, 1])),
    );
    let allocs = ctx.select(is_alloc);
    assert_eq!(alloc_info(allocs[1]).1, Some(gbox([0, 0, 0], [256, 1, 1])));
    let copies = ctx.select(is_copy);
    assert_eq!(copies.len(), 1);
    let (_, _, region, origin) = copy_info(copies[0]);
    assert_eq!(origin, CopyOrigin::Resize);
    assert_eq!(region, Region::from(gbox([0, 0, 0], [64, 1, 1])));
    assert_eq!(ctx.select(is_free).len(), 1);
}

#[test]
fn fully_overwriting_a_resized_region_copies_nothing() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, fixed([0, 0, 0], [128, 1, 1])),
    );
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, fixed([0, 0, 0], [256, 1, 1])),
    );
    assert!(ctx.select(is_copy).is_empty());
    let free = ctx.select(is_free)[0];
    // the free waits for the first kernel, the last user of the old allocation
    assert!(free.depends_on(ctx.select(is_kernel)[0].id()));
}

#[test]
fn user_initialized_buffers_are_copied_lazily() {
    for devices in [1, 2] {
        let mut ctx = Ctx::new(devices);
        let buf = ctx.buffer(&[256], true);
        assert!(ctx.select(is_copy).is_empty());
        ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::OneToOne));
        // user memory is no device peer: user -> host staging -> device
        let copies = ctx.select(is_copy);
        assert_eq!(copies.len(), 2 * devices);
        let first = copy_info(copies[0]);
        assert_eq!((first.0, first.1), (MemoryId::USER, MemoryId::HOST));
        assert!(copies.iter().all(|c| copy_info(c).1 != MemoryId::USER));
    }
}

#[test]
fn copies_between_non_peer_devices_are_staged_through_host() {
    let mut ctx = Ctx::builder().devices(2).peer_copies(false).build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    let copies: Vec<_> = ctx
        .select(is_copy)
        .into_iter()
        .filter(|c| copy_info(c).3 != CopyOrigin::Resize)
        .collect();
    assert_eq!(copies.len(), 4);
    for c in &copies {
        let (s, d, _, origin) = copy_info(c);
        assert!(
            s == MemoryId::HOST || d == MemoryId::HOST,
            "no direct device copy"
        );
        assert!(matches!(
            origin,
            CopyOrigin::Staging | CopyOrigin::Coherence
        ));
    }
    let staging = ctx
        .select(is_alloc)
        .into_iter()
        .filter(|a| {
            matches!(
                a.detail,
                RecordDetail::Alloc {
                    origin: AllocOrigin::Staging,
                    ..
                }
            )
        })
        .count();
    assert_eq!(staging, 1, "one host staging allocation for both regions");
    // the two chains are concurrent
    assert!(
        ctx.concurrent(copies[0].id(), copies[2].id())
            || ctx.concurrent(copies[0].id(), copies[3].id())
    );
}

#[test]
fn staged_broadcast_uses_one_device_to_host_copy() {
    let mut ctx = Ctx::builder().devices(4).peer_copies(false).build();
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, RangeMapper::All),
    );
    ctx.device(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    let copies = ctx.select(is_copy);
    let to_host: Vec<_> = copies
        .iter()
        .filter(|c| copy_info(c).1 == MemoryId::HOST)
        .collect();
    let from_host: Vec<_> = copies
        .iter()
        .filter(|c| copy_info(c).0 == MemoryId::HOST)
        .collect();
    assert_eq!(to_host.len(), 1);
    assert_eq!(from_host.len(), 3);
    assert!(from_host.iter().all(|c| c.depends_on(to_host[0].id())));
}

#[test]
fn host_staging_writes_only_outdated_device_allocations() {
    let mut ctx = Ctx::builder().devices(3).peer_copies(false).build();
    let buf = ctx.buffer(&[300], false);
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, RangeMapper::All),
    );
    // device 1 reads everything first, then all devices read everything
    ctx.device(
        &[3],
        CommandGroup::new().read(buf, fixed([0, 0, 0], [300, 1, 1])),
    );
    let before = ctx.select(is_copy).len();
    ctx.device(&[3], CommandGroup::new().read(buf, RangeMapper::All));
    assert_eq!(
        ctx.select(is_copy).len(),
        before,
        "everything is up to date already"
    );
}

#[test]
fn staging_allocations_are_recycled_after_two_horizons() {
    let mut ctx = Ctx::builder()
        .devices(2)
        .peer_copies(false)
        .horizon_step(1)
        .build();
    let buf = ctx.buffer(&[256], true);
    for _ in 0..20 {
        // every task needs the other device's half: staging every time
        ctx.device(
            &[256],
            CommandGroup::new()
                .read(buf, RangeMapper::All)
                .discard_write(buf, RangeMapper::OneToOne),
        );
    }
    ctx.finish();
    let staging: Vec<_> = ctx
        .select(is_alloc)
        .into_iter()
        .filter(|a| {
            matches!(
                a.detail,
                RecordDetail::Alloc {
                    origin: AllocOrigin::Staging,
                    ..
                }
            )
        })
        .collect();
    assert_eq!(
        staging.len(),
        2,
        "bounded state: two staging allocations over a long run"
    );
    // freed at shutdown
    let staging_ids: Vec<_> = staging
        .iter()
        .map(|a| match a.kind() {
            InstructionKind::Alloc { allocation, .. } => *allocation,
            _ => unreachable!(),
        })
        .collect();
    let freed = ctx
        .select(is_free)
        .iter()
        .filter(|f| matches!(f.kind(), InstructionKind::Free { allocation } if staging_ids.contains(allocation)))
        .count();
    assert_eq!(freed, 2);
}

#[test]
fn narrow_strided_columns_are_linearized_on_the_device() {
    let mut ctx = Ctx::builder().devices(2).peer_copies(false).build();
    let buf = ctx.buffer(&[256, 256], false);
    ctx.device(
        &[256, 256],
        CommandGroup::new()
            .discard_write(buf, RangeMapper::OneToOne)
            .hint_split_2d(),
    );
    // each device reads one column of the other device's part
    ctx.device(
        &[256, 256],
        CommandGroup::new().read(
            buf,
            RangeMapper::Custom(Arc::new(|ck: &crate::task::Chunk, _, _| {
                let col = if ck.offset[1] == 0 { 200 } else { 10 };
                let _ = col;
                Subrange::new(Id::new(0, col, 0), Range::new(256, 1, 1))
            })),
        ),
    );
    let origins: Vec<_> = ctx.select(is_copy).iter().map(|c| copy_info(c).3).collect();
    assert!(origins.contains(&CopyOrigin::Linearizing));
    assert!(origins.contains(&CopyOrigin::Delinearizing));
}

#[test]
fn linearization_heuristic() {
    use super::super::coherence::should_linearize_copy_region;
    let alloc = gbox([0, 0, 0], [256, 256, 1]);
    let column: Region = gbox([0, 7, 0], [256, 8, 1]).into();
    let rows: Region = gbox([0, 0, 0], [16, 256, 1]).into();
    assert!(should_linearize_copy_region(mem(2), &alloc, &column, 4));
    assert!(
        !should_linearize_copy_region(MemoryId::HOST, &alloc, &column, 4),
        "host memory is never linearised"
    );
    assert!(
        !should_linearize_copy_region(mem(2), &alloc, &rows, 4),
        "contiguous rows need no linearisation"
    );
    let wide: Region = gbox([0, 0, 0], [256, 32, 1]).into();
    assert!(
        !should_linearize_copy_region(mem(2), &alloc, &wide, 4),
        "32 elements x 4 bytes is a long enough run"
    );
}

#[test]
fn oddly_shaped_coherence_copy_is_a_single_instruction() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256, 256], false);
    ctx.host(
        &[256, 256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    // an L-shaped read region
    ctx.device(
        &[1],
        CommandGroup::new()
            .read(buf, fixed([0, 0, 0], [64, 128, 1]))
            .read(buf, fixed([0, 0, 0], [128, 64, 1])),
    );
    let copies = ctx.select(is_copy);
    assert_eq!(copies.len(), 1);
    assert_eq!(copy_info(copies[0]).2.area(), 64 * 128 + 64 * 64);
}

#[test]
fn resize_copies_come_only_from_allocations_not_fully_overwritten() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, fixed([0, 0, 0], [64, 1, 1])),
    );
    ctx.device(
        &[1],
        CommandGroup::new().discard_write(buf, fixed([128, 0, 0], [64, 1, 1])),
    );
    // overwrite the first, keep the second, grow over both
    ctx.device(
        &[1],
        CommandGroup::new()
            .discard_write(buf, fixed([0, 0, 0], [64, 1, 1]))
            .read_write(buf, fixed([64, 0, 0], [192, 1, 1])),
    );
    let resize: Vec<_> = ctx
        .select(is_copy)
        .into_iter()
        .filter(|c| copy_info(c).3 == CopyOrigin::Resize)
        .collect();
    assert_eq!(resize.len(), 1);
    assert_eq!(
        copy_info(resize[0]).2,
        Region::from(gbox([128, 0, 0], [192, 1, 1]))
    );
}

#[test]
fn read_plus_discard_write_is_a_read_write() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256], true);
    ctx.device(
        &[256],
        CommandGroup::new()
            .read(buf, RangeMapper::OneToOne)
            .discard_write(buf, RangeMapper::OneToOne),
    );
    // the read keeps the data: it is copied in from user memory
    assert!(!ctx.select(is_copy).is_empty());
}

#[test]
fn kernels_report_their_memory_traffic() {
    let mut ctx = Ctx::new(1);
    let a = ctx.buffer(&[256], true);
    let b = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new()
            .read(a, RangeMapper::OneToOne)
            .discard_write(b, RangeMapper::OneToOne),
    );
    ctx.device(
        &[256],
        CommandGroup::new().read_write(b, RangeMapper::OneToOne),
    );
    let k = ctx.select(is_kernel);
    let traffic = |r: &InstructionRecord| match r.kind() {
        InstructionKind::DeviceKernel {
            estimated_traffic_bytes,
            ..
        } => *estimated_traffic_bytes,
        _ => unreachable!(),
    };
    assert_eq!(traffic(k[0]), 2 * 256 * 4);
    assert_eq!(traffic(k[1]), 2 * 256 * 4);
}

#[test]
fn stencil_with_2d_split_exchanges_no_diagonal_corners_between_devices() {
    let mut ctx = Ctx::new(4);
    let buf = ctx.buffer(&[256, 256], false);
    ctx.device(
        &[256, 256],
        CommandGroup::new()
            .discard_write(buf, RangeMapper::OneToOne)
            .hint_split_2d(),
    );
    ctx.device(
        &[256, 256],
        CommandGroup::new()
            .read(buf, RangeMapper::NeighborhoodAlongAxes([1, 1, 0]))
            .hint_split_2d(),
    );
    let copies = coherence_copies(&ctx);
    // each of the 4 quadrants exchanges with its 2 edge neighbours only
    assert_eq!(copies.len(), 8);
    for c in copies {
        let (s, d, region, _) = copy_info(c);
        let (si, di) = (s.0 - 2, d.0 - 2);
        // quadrant index = 2 * row + column: neighbours differ in exactly one bit
        assert_eq!(
            (si ^ di).count_ones(),
            1,
            "{s} -> {d} is a diagonal exchange"
        );
        assert_eq!(region.area(), 128);
    }
}

#[test]
fn frequent_allocations_are_warned_about() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[64], false);
    for i in 0..12 {
        ctx.device(
            &[1],
            CommandGroup::new().read_write(buf, fixed([0, 0, 0], [i + 1, 1, 1])),
        );
    }
    let _ = GridBox::EMPTY;
    assert!(
        ctx.recorder()
            .warnings()
            .iter()
            .any(|w| w.contains("frequent allocations"))
    );
}

#[test]
fn oddly_shaped_resize_copy_is_a_single_instruction() {
    let mut ctx = Ctx::new(1);
    let buf = ctx.buffer(&[256, 256], false);
    ctx.device(
        &[1],
        CommandGroup::new()
            .discard_write(buf, fixed([0, 0, 0], [64, 128, 1]))
            .discard_write(buf, fixed([0, 0, 0], [128, 64, 1])),
    );
    ctx.device(
        &[1],
        CommandGroup::new().read_write(buf, fixed([0, 0, 0], [256, 256, 1])),
    );
    let resize: Vec<_> = ctx
        .select(is_copy)
        .into_iter()
        .filter(|c| copy_info(c).3 == CopyOrigin::Resize)
        .collect();
    assert_eq!(resize.len(), 1);
    assert_eq!(copy_info(resize[0]).2.area(), 64 * 128 + 64 * 64);
}

#[test]
fn host_staging_keeps_concurrent_kernels_independent() {
    let mut ctx = Ctx::builder().devices(2).peer_copies(false).build();
    let a = ctx.buffer(&[256], false);
    let b = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(a, RangeMapper::OneToOne),
    );
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(b, RangeMapper::OneToOne),
    );
    ctx.device(&[256], CommandGroup::new().read(a, RangeMapper::All));
    ctx.device(&[256], CommandGroup::new().read(b, RangeMapper::All));
    let k = ctx.select(is_kernel);
    // the two readers of `a` never wait for the writers of `b`
    assert!(!ctx.depends_transitively(k[4].id(), k[2].id()));
    assert!(!ctx.depends_transitively(k[5].id(), k[3].id()));
}

#[test]
fn staged_neighborhood_reads_fan_out_only_to_devices_that_need_each_piece() {
    for split_2d in [false, true] {
        let mut ctx = Ctx::builder().devices(4).peer_copies(false).build();
        let buf = ctx.buffer(&[64, 64], false);
        let mut write = CommandGroup::new().discard_write(buf, RangeMapper::OneToOne);
        let mut read = CommandGroup::new().read(buf, RangeMapper::Neighborhood([1, 1, 0]));
        if split_2d {
            write = write.hint_split_2d();
            read = read.hint_split_2d();
        }
        ctx.device(&[64, 64], write);
        ctx.device(&[64, 64], read);
        // every host-to-device copy lands in a device whose reader needs exactly that piece
        let kernels = ctx.select(is_kernel);
        for c in ctx.select(is_copy) {
            let (s, d, region, _) = copy_info(c);
            if s == MemoryId::HOST && d >= MemoryId::FIRST_DEVICE {
                let reader = kernels[kernels.len() - 4 + (d.0 - 2) as usize];
                let InstructionKind::DeviceKernel { accesses, .. } = reader.kind() else {
                    unreachable!()
                };
                assert!(accesses[0].accessed_box.covers(&region.bounding_box()));
            }
        }
    }
}
