//go:build !linux

package hashwalk

// readBufSize is the portable walk's read size: large enough that system
// call overhead is small next to hashing, small enough that every bound is
// checked often.
const readBufSize = 64 << 10

// The portable walk always hands its hashers a reader (job.r), never a raw
// descriptor; these keep the engine's shared code whole.
func closeFD(int) {}

func (e *engine) hashFD(*job, *hasher) { e.unreadable.Add(1) }
