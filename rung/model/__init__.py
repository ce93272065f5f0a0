"""Pure cost model: scenario in, numbers out. No TensorFlow, no printing.

One module per term (memory, comm, straggler, preemption, ps, inputs); `throughput`
composes them for one configuration and `sweep` for many at once.
"""
