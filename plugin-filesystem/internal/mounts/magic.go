package mounts

// Linux statfs f_type values (see statfs(2) and linux/magic.h). They let a
// walk check a directory it has just opened against the filesystem the
// kernel actually put there, which also catches mounts made after the mount
// list was read and works when that list could not be read at all.
const (
	magicNFS      = 0x6969
	magicSMB      = 0x517b
	magicCIFS     = 0xff534d42
	magicSMB2     = 0xfe534d42
	magicNCP      = 0x564c
	magicAFS      = 0x5346414f
	magicKAFS     = 0x6b414653
	magicCoda     = 0x73757245
	magicCeph     = 0x00c36400
	magicV9FS     = 0x01021997
	magicOCFS2    = 0x7461636f
	magicGFS2     = 0x01161970
	magicLustre   = 0x0bd00bd0
	magicGPFS     = 0x47504653
	magicProc     = 0x9fa0
	magicSysfs    = 0x62656572
	magicDevpts   = 0x1cd1
	magicCgroup   = 0x27e0eb
	magicCgroup2  = 0x63677270
	magicDebugfs  = 0x64626720
	magicTracefs  = 0x74726163
	magicSecfs    = 0x73636673
	magicPstore   = 0x6165676c
	magicBPF      = 0xcafe4a11
	magicConfigfs = 0x62656570
	magicFusectl  = 0x65735543
	magicMqueue   = 0x19800202
	magicHugetlb  = 0x958458f6
	magicBinfmt   = 0x42494e4d
	magicEfivarfs = 0xde5e81e4
	magicSelinux  = 0xf97cff8c
	magicSmack    = 0x43415d53
	magicNsfs     = 0x6e736673
	magicAutofs   = 0x0187
	magicRPCPipe  = 0x67596969
)

// ClassifyMagic classifies a Linux statfs f_type value. Generic FUSE and
// tmpfs (which devtmpfs also reports) cannot be told apart by this number and
// read as Local; the mount list's type names cover those.
func ClassifyMagic(ftype uint32) Class {
	switch ftype {
	case magicNFS, magicSMB, magicCIFS, magicSMB2, magicNCP, magicAFS,
		magicKAFS, magicCoda, magicCeph, magicV9FS, magicOCFS2, magicGFS2,
		magicLustre, magicGPFS:
		return Network
	case magicProc, magicSysfs, magicDevpts, magicCgroup, magicCgroup2,
		magicDebugfs, magicTracefs, magicSecfs, magicPstore, magicBPF,
		magicConfigfs, magicFusectl, magicMqueue, magicHugetlb, magicBinfmt,
		magicEfivarfs, magicSelinux, magicSmack, magicNsfs, magicAutofs,
		magicRPCPipe:
		return Pseudo
	}
	return Local
}
