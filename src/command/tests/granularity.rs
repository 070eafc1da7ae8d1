//! Celerity's `command_graph_granularity_tests.cc`: splits respect granularity and split
//! constraints, split_2d, no empty chunks, empty accesses.

use super::*;
use RangeMapper::OneToOne;

fn dim0_sizes(ctx: &Ctx, tid: TaskId) -> Vec<usize> {
    ctx.task(tid)
        .records()
        .map(|r| r.execution_range().unwrap().range()[0])
        .collect()
}

#[test]
fn splits_respect_task_granularity() {
    let mut ctx = Ctx::new(4);
    let simple = [
        ctx.device(&[255]).submit(),
        ctx.device(&[255, 19]).submit(),
        ctx.device(&[255, 19, 31]).submit(),
    ];
    // nd-ranges are expressed as split constraints (the work-group size)
    let perfect = [
        ctx.device(&[256]).constrain_split(&[32]).submit(),
        ctx.device(&[256, 19]).constrain_split(&[32, 19]).submit(),
        ctx.device(&[256, 19, 31])
            .constrain_split(&[32, 19, 31])
            .submit(),
    ];
    let rebalance = [
        ctx.device(&[320]).constrain_split(&[32]).submit(),
        ctx.device(&[320, 19]).constrain_split(&[32, 19]).submit(),
        ctx.device(&[320, 19, 31])
            .constrain_split(&[32, 19, 31])
            .submit(),
    ];
    for tid in simple {
        let sizes = dim0_sizes(&ctx, tid);
        assert!(sizes.iter().all(|&s| s == 63 || s == 64), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 255);
    }
    for tid in perfect {
        assert_eq!(dim0_sizes(&ctx, tid), [64; 4]);
    }
    for tid in rebalance {
        let sizes = dim0_sizes(&ctx, tid);
        assert!(sizes.iter().all(|&s| s == 64 || s == 96), "{sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), 320);
    }
}

#[test]
fn splits_respect_split_constraints() {
    let mut ctx = Ctx::new(4);
    let a = ctx.device(&[128]).constrain_split(&[64]).submit();
    assert_eq!(ctx.task(a).count(), 2);
    for n in 0..2 {
        assert_eq!(
            ctx.task(a).on(n).one().execution_range().unwrap().range(),
            Range([64, 1, 1])
        );
    }
    // an nd-range of work-group 32 constrained to 3: the least common multiple, 96
    let b = ctx.device(&[192]).constrain_split(&[96]).submit();
    assert_eq!(ctx.task(b).count(), 2);
    for n in 0..2 {
        assert_eq!(
            ctx.task(b).on(n).one().execution_range().unwrap().range(),
            Range([96, 1, 1])
        );
    }
}

#[test]
fn split_2d_hint_creates_2d_chunks() {
    let mut ctx = Ctx::new(4);
    let a = ctx.device(&[128, 128]).split_2d().submit();
    assert_eq!(ctx.task(a).count(), 4);
    for n in 0..4 {
        assert_eq!(
            ctx.task(a).on(n).one().execution_range().unwrap().range(),
            Range([64, 64, 1])
        );
    }
}

#[test]
fn no_empty_chunks() {
    for dims in 1..=3 {
        for nd in [false, true] {
            let mut ctx = Ctx::new(3);
            let range = if nd {
                &[16, 2, 2][..dims]
            } else {
                &[2, 2, 2][..dims]
            };
            let tid = if nd {
                ctx.device(range)
                    .constrain_split(&[8, 1, 1][..dims])
                    .submit()
            } else {
                ctx.device(range).submit()
            };
            let cmds = ctx.task(tid);
            assert_eq!(cmds.count(), 2);
            assert_eq!(cmds.on(2).count(), 0);
            for n in 0..2 {
                let mut expected = Range::from_slice(range);
                expected[0] /= 2;
                assert_eq!(
                    cmds.on(n).one().execution_range().unwrap().range(),
                    expected
                );
            }
        }
    }
}

#[test]
fn empty_range_accesses_generate_no_pushes_or_dataflow_dependencies() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[16], false);
    let write = ctx.device(&[16]).discard_write(buf, OneToOne).submit();
    let read_rm = custom(|c| {
        let end = c.offset[0] + c.range[0];
        sr1(4, end.max(4))
    });
    let read = ctx.device(&[8]).read(buf, read_rm).submit();
    assert!(ctx.task(write).is_concurrent_with(&ctx.task(read)));
    assert_eq!(ctx.kind("push").count(), 1);
    assert_eq!(ctx.kind("push").on(0).count(), 1);
    assert_eq!(ctx.kind("await push").count(), 1);
    assert_eq!(ctx.kind("await push").on(1).count(), 1);
}
