package sandbox

// oneShotSupported says whether Runtime.Run can build a sandbox without
// sandbox init on this architecture (it needs cloneInit and cloneCommand).
const oneShotSupported = true

// cloneInit and cloneCommand are clone(2) with the child on a stack of its
// own, running childMain or childCommand (clone_linux_amd64.s). With CLONE_VM
// the child shares cwm's memory, so neither page tables nor pages are
// copied.
func cloneInit(flags, stack uintptr, c *childArgs) (pid uintptr, errno uintptr)
func cloneCommand(flags, stack uintptr, c *childArgs) (pid uintptr, errno uintptr)
