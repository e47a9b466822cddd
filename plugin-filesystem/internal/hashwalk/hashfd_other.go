//go:build !linux

package hashwalk

// readBufSize is the portable walk's read size.
const readBufSize = chunkSize

// The portable walk always hands its hashers a reader (job.r), never a raw
// descriptor; these keep the engine's shared code whole.
func closeFD(int) {}

func (e *engine) hashFD(*job, *hasher) { e.unreadable.Add(1) }
