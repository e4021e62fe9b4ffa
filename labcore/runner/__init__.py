"""How every topic runs a config: run or load (`cached`), the round loop with checkpoints (`rounds`,
`checkpoint`), one trainer per config across processes (`lock`) and one on-disk format (`store`). Where runs are
kept and how many threads they use: `labcore.runtime`."""
