package proctree

// EnvCgroup names the variable in which the agent tells a plugin child the cgroup
// (v2 directory) it made for that child alone: its box with resource limits.
const EnvCgroup = "YUZU_PLUGIN_CGROUP"

// EndOwnCgroup ends every process in the calling process's own box, itself
// included, when the agent made one for it (EnvCgroup) and the process is still in
// it. A plugin calls it as its last act once the agent is gone: processes that left
// its process group and lost their parent are in the box still, where no walk of the
// process tree finds them. Elsewhere than on Linux, and without a box, it does
// nothing.
func EndOwnCgroup() { endOwnCgroup() }
