//! The engine's view of generated instruction graphs: every instruction lands on the queue its
//! placement asks for, and the out-of-order engine runs whole generated graphs (graphs built with
//! the instruction graph tests' context).

use crate::executor::engine::{EngineInstruction, OutOfOrderEngine, Target};
use crate::instruction::tests::{Ctx, is_copy};
use crate::instruction::{InstructionKind, priority};
use crate::task::{CommandGroup, RangeMapper};

#[test]
fn instructions_carry_engine_placement() {
    let mut ctx = Ctx::new(2);
    let buf = ctx.buffer(&[256], false);
    ctx.device(
        &[256],
        CommandGroup::new().discard_write(buf, RangeMapper::OneToOne),
    );
    ctx.host(&[256], CommandGroup::new().read(buf, RangeMapper::All));
    let system = ctx.iggen.system().clone();
    for r in ctx.all() {
        let e = EngineInstruction::of(&r.instruction, &system);
        let expected = match r.kind() {
            InstructionKind::Alloc { .. } | InstructionKind::Free { .. } => Target::AllocQueue,
            InstructionKind::DeviceKernel { .. } | InstructionKind::Copy { .. } => {
                Target::DeviceQueue
            }
            InstructionKind::HostTask { .. } => Target::HostQueue,
            _ => Target::Immediate,
        };
        assert_eq!(e.target, expected, "{}", r.kind().name());
        assert_eq!(e.priority, r.instruction.priority());
    }
    let copy = ctx.select(is_copy)[0];
    assert_eq!(copy.instruction.priority(), priority::COPY);
}

#[test]
fn the_out_of_order_engine_runs_every_generated_instruction() {
    let mut ctx = Ctx::builder()
        .nodes(2)
        .devices(2)
        .peer_copies(false)
        .build();
    let buf = ctx.buffer(&[256, 256], true);
    for _ in 0..4 {
        ctx.device(
            &[256, 256],
            CommandGroup::new()
                .read(buf, RangeMapper::NeighborhoodAlongAxes([1, 1, 0]))
                .discard_write(buf, RangeMapper::OneToOne),
        );
    }
    ctx.host(&[256, 256], CommandGroup::new().read(buf, RangeMapper::All));
    ctx.finish();
    let system = ctx.iggen.system().clone();
    let mut engine = OutOfOrderEngine::new(2);
    for r in ctx.all() {
        engine.submit(EngineInstruction::of(&r.instruction, &system));
    }
    let mut done = 0;
    while let Some(a) = engine.assign_one() {
        engine.complete_assigned(a.id);
        done += 1;
    }
    assert_eq!(done, ctx.all().len());
    assert!(engine.is_idle());
}
