package uring

import (
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// field is one struct member: its offset and size in bytes.
type field struct {
	Name      string
	Off, Size uintptr
}

func f[T any](name string, off uintptr, v T) field {
	return field{name, off, unsafe.Sizeof(v)}
}

// TestLayout pins every struct shared with the kernel to the UAPI. The
// wanted numbers were printed by a C program using offsetof/sizeof on
// /usr/include/linux/io_uring.h and linux/openat2.h.
func TestLayout(t *testing.T) {
	var (
		sqe SQE
		cqe CQE
		sqo sqringOffsets
		cqo cqringOffsets
		p   params
		ga  getEventsArg
		rw  regWait
		rd  regionDesc
		mr  memRegionReg
		rr  rsrcRegister
		ru  rsrcUpdate
		fu  filesUpdate
		how OpenHow
		po  probeOp
		prb probe
	)
	tests := []struct {
		name       string
		size, want uintptr
		got, wantF []field
	}{
		{"io_uring_sqe", unsafe.Sizeof(sqe), 64, []field{
			f("opcode", unsafe.Offsetof(sqe.Opcode), sqe.Opcode),
			f("flags", unsafe.Offsetof(sqe.Flags), sqe.Flags),
			f("ioprio", unsafe.Offsetof(sqe.Ioprio), sqe.Ioprio),
			f("fd", unsafe.Offsetof(sqe.Fd), sqe.Fd),
			f("off", unsafe.Offsetof(sqe.Off), sqe.Off),
			f("addr", unsafe.Offsetof(sqe.Addr), sqe.Addr),
			f("len", unsafe.Offsetof(sqe.Len), sqe.Len),
			f("rw_flags", unsafe.Offsetof(sqe.OpFlags), sqe.OpFlags),
			f("user_data", unsafe.Offsetof(sqe.UserData), sqe.UserData),
			f("buf_index", unsafe.Offsetof(sqe.BufIndex), sqe.BufIndex),
			f("personality", unsafe.Offsetof(sqe.Personality), sqe.Personality),
			f("file_index", unsafe.Offsetof(sqe.FileIndex), sqe.FileIndex),
			f("addr3", unsafe.Offsetof(sqe.Addr3), sqe.Addr3),
		}, []field{
			{"opcode", 0, 1}, {"flags", 1, 1}, {"ioprio", 2, 2}, {"fd", 4, 4}, {"off", 8, 8},
			{"addr", 16, 8}, {"len", 24, 4}, {"rw_flags", 28, 4}, {"user_data", 32, 8},
			{"buf_index", 40, 2}, {"personality", 42, 2}, {"file_index", 44, 4}, {"addr3", 48, 8},
		}},
		{"io_uring_cqe", unsafe.Sizeof(cqe), 16, []field{
			f("user_data", unsafe.Offsetof(cqe.UserData), cqe.UserData),
			f("res", unsafe.Offsetof(cqe.Res), cqe.Res),
			f("flags", unsafe.Offsetof(cqe.Flags), cqe.Flags),
		}, []field{{"user_data", 0, 8}, {"res", 8, 4}, {"flags", 12, 4}}},
		{"io_sqring_offsets", unsafe.Sizeof(sqo), 40, []field{
			f("head", unsafe.Offsetof(sqo.Head), sqo.Head),
			f("tail", unsafe.Offsetof(sqo.Tail), sqo.Tail),
			f("ring_mask", unsafe.Offsetof(sqo.RingMask), sqo.RingMask),
			f("ring_entries", unsafe.Offsetof(sqo.RingEntries), sqo.RingEntries),
			f("flags", unsafe.Offsetof(sqo.Flags), sqo.Flags),
			f("dropped", unsafe.Offsetof(sqo.Dropped), sqo.Dropped),
			f("array", unsafe.Offsetof(sqo.Array), sqo.Array),
			f("resv1", unsafe.Offsetof(sqo.Resv1), sqo.Resv1),
			f("user_addr", unsafe.Offsetof(sqo.UserAddr), sqo.UserAddr),
		}, []field{
			{"head", 0, 4}, {"tail", 4, 4}, {"ring_mask", 8, 4}, {"ring_entries", 12, 4},
			{"flags", 16, 4}, {"dropped", 20, 4}, {"array", 24, 4}, {"resv1", 28, 4}, {"user_addr", 32, 8},
		}},
		{"io_cqring_offsets", unsafe.Sizeof(cqo), 40, []field{
			f("head", unsafe.Offsetof(cqo.Head), cqo.Head),
			f("tail", unsafe.Offsetof(cqo.Tail), cqo.Tail),
			f("ring_mask", unsafe.Offsetof(cqo.RingMask), cqo.RingMask),
			f("ring_entries", unsafe.Offsetof(cqo.RingEntries), cqo.RingEntries),
			f("overflow", unsafe.Offsetof(cqo.Overflow), cqo.Overflow),
			f("cqes", unsafe.Offsetof(cqo.Cqes), cqo.Cqes),
			f("flags", unsafe.Offsetof(cqo.Flags), cqo.Flags),
			f("resv1", unsafe.Offsetof(cqo.Resv1), cqo.Resv1),
			f("user_addr", unsafe.Offsetof(cqo.UserAddr), cqo.UserAddr),
		}, []field{
			{"head", 0, 4}, {"tail", 4, 4}, {"ring_mask", 8, 4}, {"ring_entries", 12, 4},
			{"overflow", 16, 4}, {"cqes", 20, 4}, {"flags", 24, 4}, {"resv1", 28, 4}, {"user_addr", 32, 8},
		}},
		{"io_uring_params", unsafe.Sizeof(p), 120, []field{
			f("sq_entries", unsafe.Offsetof(p.SqEntries), p.SqEntries),
			f("cq_entries", unsafe.Offsetof(p.CqEntries), p.CqEntries),
			f("flags", unsafe.Offsetof(p.Flags), p.Flags),
			f("sq_thread_cpu", unsafe.Offsetof(p.SqThreadCPU), p.SqThreadCPU),
			f("sq_thread_idle", unsafe.Offsetof(p.SqThreadIdle), p.SqThreadIdle),
			f("features", unsafe.Offsetof(p.Features), p.Features),
			f("wq_fd", unsafe.Offsetof(p.WqFd), p.WqFd),
			f("resv", unsafe.Offsetof(p.Resv), p.Resv),
			f("sq_off", unsafe.Offsetof(p.SqOff), p.SqOff),
			f("cq_off", unsafe.Offsetof(p.CqOff), p.CqOff),
		}, []field{
			{"sq_entries", 0, 4}, {"cq_entries", 4, 4}, {"flags", 8, 4}, {"sq_thread_cpu", 12, 4},
			{"sq_thread_idle", 16, 4}, {"features", 20, 4}, {"wq_fd", 24, 4}, {"resv", 28, 12},
			{"sq_off", 40, 40}, {"cq_off", 80, 40},
		}},
		{"io_uring_getevents_arg", unsafe.Sizeof(ga), 24, []field{
			f("sigmask", unsafe.Offsetof(ga.Sigmask), ga.Sigmask),
			f("sigmask_sz", unsafe.Offsetof(ga.SigmaskSz), ga.SigmaskSz),
			f("min_wait_usec", unsafe.Offsetof(ga.MinWait), ga.MinWait),
			f("ts", unsafe.Offsetof(ga.Ts), ga.Ts),
		}, []field{{"sigmask", 0, 8}, {"sigmask_sz", 8, 4}, {"min_wait_usec", 12, 4}, {"ts", 16, 8}}},
		// Linux 6.13, newer than this machine's headers: from the kernel's
		// include/uapi/linux/io_uring.h.
		{"io_uring_reg_wait", unsafe.Sizeof(rw), 64, []field{
			f("ts.tv_sec", unsafe.Offsetof(rw.Sec), rw.Sec),
			f("ts.tv_nsec", unsafe.Offsetof(rw.Nsec), rw.Nsec),
			f("min_wait_usec", unsafe.Offsetof(rw.MinWaitUsec), rw.MinWaitUsec),
			f("flags", unsafe.Offsetof(rw.Flags), rw.Flags),
			f("sigmask", unsafe.Offsetof(rw.Sigmask), rw.Sigmask),
			f("sigmask_sz", unsafe.Offsetof(rw.SigmaskSz), rw.SigmaskSz),
		}, []field{{"ts.tv_sec", 0, 8}, {"ts.tv_nsec", 8, 8}, {"min_wait_usec", 16, 4}, {"flags", 20, 4},
			{"sigmask", 24, 8}, {"sigmask_sz", 32, 4}}},
		{"io_uring_region_desc", unsafe.Sizeof(rd), 64, []field{
			f("user_addr", unsafe.Offsetof(rd.UserAddr), rd.UserAddr),
			f("size", unsafe.Offsetof(rd.Size), rd.Size),
			f("flags", unsafe.Offsetof(rd.Flags), rd.Flags),
			f("id", unsafe.Offsetof(rd.ID), rd.ID),
			f("mmap_offset", unsafe.Offsetof(rd.MmapOffset), rd.MmapOffset),
		}, []field{{"user_addr", 0, 8}, {"size", 8, 8}, {"flags", 16, 4}, {"id", 20, 4}, {"mmap_offset", 24, 8}}},
		{"io_uring_mem_region_reg", unsafe.Sizeof(mr), 32, []field{
			f("region_uptr", unsafe.Offsetof(mr.RegionUptr), mr.RegionUptr),
			f("flags", unsafe.Offsetof(mr.Flags), mr.Flags),
		}, []field{{"region_uptr", 0, 8}, {"flags", 8, 8}}},
		{"io_uring_rsrc_register", unsafe.Sizeof(rr), 32, []field{
			f("nr", unsafe.Offsetof(rr.Nr), rr.Nr),
			f("flags", unsafe.Offsetof(rr.Flags), rr.Flags),
			f("resv2", unsafe.Offsetof(rr.Resv2), rr.Resv2),
			f("data", unsafe.Offsetof(rr.Data), rr.Data),
			f("tags", unsafe.Offsetof(rr.Tags), rr.Tags),
		}, []field{{"nr", 0, 4}, {"flags", 4, 4}, {"resv2", 8, 8}, {"data", 16, 8}, {"tags", 24, 8}}},
		{"io_uring_rsrc_update", unsafe.Sizeof(ru), 16, []field{
			f("offset", unsafe.Offsetof(ru.Offset), ru.Offset),
			f("resv", unsafe.Offsetof(ru.Resv), ru.Resv),
			f("data", unsafe.Offsetof(ru.Data), ru.Data),
		}, []field{{"offset", 0, 4}, {"resv", 4, 4}, {"data", 8, 8}}},
		{"io_uring_files_update", unsafe.Sizeof(fu), 16, []field{
			f("offset", unsafe.Offsetof(fu.Offset), fu.Offset),
			f("resv", unsafe.Offsetof(fu.Resv), fu.Resv),
			f("fds", unsafe.Offsetof(fu.Fds), fu.Fds),
		}, []field{{"offset", 0, 4}, {"resv", 4, 4}, {"fds", 8, 8}}},
		{"open_how", unsafe.Sizeof(how), 24, []field{
			f("flags", unsafe.Offsetof(how.Flags), how.Flags),
			f("mode", unsafe.Offsetof(how.Mode), how.Mode),
			f("resolve", unsafe.Offsetof(how.Resolve), how.Resolve),
		}, []field{{"flags", 0, 8}, {"mode", 8, 8}, {"resolve", 16, 8}}},
		{"io_uring_probe_op", unsafe.Sizeof(po), 8, []field{
			f("op", unsafe.Offsetof(po.Op), po.Op),
			f("resv", unsafe.Offsetof(po.Resv), po.Resv),
			f("flags", unsafe.Offsetof(po.Flags), po.Flags),
			f("resv2", unsafe.Offsetof(po.Resv2), po.Resv2),
		}, []field{{"op", 0, 1}, {"resv", 1, 1}, {"flags", 2, 2}, {"resv2", 4, 4}}},
		// struct io_uring_probe is 16 bytes plus a flexible array of ops;
		// ours has room for 256.
		{"io_uring_probe", unsafe.Sizeof(prb), 16 + 256*8, []field{
			f("last_op", unsafe.Offsetof(prb.LastOp), prb.LastOp),
			f("ops_len", unsafe.Offsetof(prb.OpsLen), prb.OpsLen),
			f("resv", unsafe.Offsetof(prb.Resv), prb.Resv),
			f("resv2", unsafe.Offsetof(prb.Resv2), prb.Resv2),
			{"ops", unsafe.Offsetof(prb.Ops), unsafe.Sizeof(prb.Ops[0])},
		}, []field{{"last_op", 0, 1}, {"ops_len", 1, 1}, {"resv", 2, 2}, {"resv2", 4, 12}, {"ops", 16, 8}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.size != tc.want {
				t.Errorf("sizeof(%s) = %d, want %d", tc.name, tc.size, tc.want)
			}
			if diff := cmp.Diff(tc.wantF, tc.got); diff != "" {
				t.Errorf("%s fields (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

// TestConstants pins opcode and flag values to the UAPI.
func TestConstants(t *testing.T) {
	got := map[string]uint64{
		"IORING_OP_NOP": uint64(OpNop), "IORING_OP_READV": uint64(OpReadv), "IORING_OP_WRITEV": uint64(OpWritev),
		"IORING_OP_FSYNC": uint64(OpFsync), "IORING_OP_READ_FIXED": uint64(OpReadFixed),
		"IORING_OP_WRITE_FIXED": uint64(OpWriteFixed), "IORING_OP_TIMEOUT": uint64(OpTimeout),
		"IORING_OP_ACCEPT": uint64(OpAccept), "IORING_OP_ASYNC_CANCEL": uint64(OpAsyncCancel),
		"IORING_OP_LINK_TIMEOUT": uint64(OpLinkTimeout), "IORING_OP_CONNECT": uint64(OpConnect),
		"IORING_OP_FALLOCATE": uint64(OpFallocate), "IORING_OP_OPENAT": uint64(OpOpenat),
		"IORING_OP_CLOSE": uint64(OpClose), "IORING_OP_FILES_UPDATE": uint64(OpFilesUpdate),
		"IORING_OP_STATX": uint64(OpStatx), "IORING_OP_READ": uint64(OpRead), "IORING_OP_WRITE": uint64(OpWrite),
		"IORING_OP_SEND": uint64(OpSend), "IORING_OP_RECV": uint64(OpRecv), "IORING_OP_OPENAT2": uint64(OpOpenat2),
		"IORING_OP_RENAMEAT": uint64(OpRenameat), "IORING_OP_UNLINKAT": uint64(OpUnlinkat),
		"IORING_OP_MKDIRAT": uint64(OpMkdirat), "IORING_OP_MSG_RING": uint64(OpMsgRing),
		"IOSQE_FIXED_FILE": uint64(SQEFixedFile), "IOSQE_IO_DRAIN": uint64(SQEIODrain),
		"IOSQE_IO_LINK": uint64(SQEIOLink), "IOSQE_IO_HARDLINK": uint64(SQEIOHardlink),
		"IOSQE_ASYNC": uint64(SQEAsync), "IOSQE_BUFFER_SELECT": uint64(SQEBufferSelect),
		"IOSQE_CQE_SKIP_SUCCESS": uint64(SQECQESkipSuccess),
		"IORING_SETUP_SQPOLL":    uint64(SetupSQPoll), "IORING_SETUP_CQSIZE": uint64(SetupCQSize),
		"IORING_SETUP_CLAMP": uint64(SetupClamp), "IORING_SETUP_COOP_TASKRUN": uint64(SetupCoopTaskrun),
		"IORING_SETUP_SINGLE_ISSUER": uint64(SetupSingleIssuer), "IORING_SETUP_DEFER_TASKRUN": uint64(SetupDeferTaskrun),
		"IORING_SETUP_NO_SQARRAY": uint64(SetupNoSQArray), "IORING_SETUP_R_DISABLED": uint64(SetupRDisabled),
		"IORING_ENTER_EXT_ARG_REG": uint64(enterExtArgReg), "IORING_REGISTER_ENABLE_RINGS": registerEnableRings,
		"IORING_REGISTER_MEM_REGION": registerMemRegion, "IORING_MEM_REGION_TYPE_USER": memRegionTypeUser,
		"IORING_MEM_REGION_REG_WAIT_ARG": memRegionRegWaitArg, "IORING_REG_WAIT_TS": regWaitTS,
		"IORING_FEAT_SINGLE_MMAP": uint64(FeatSingleMmap), "IORING_FEAT_NODROP": uint64(FeatNoDrop),
		"IORING_FEAT_EXT_ARG": uint64(FeatExtArg), "IORING_FEAT_CQE_SKIP": uint64(FeatCQESkip),
		"IORING_ENTER_GETEVENTS": uint64(enterGetEvents), "IORING_ENTER_SQ_WAKEUP": uint64(enterSQWakeup),
		"IORING_ENTER_EXT_ARG": uint64(enterExtArg), "IORING_ENTER_REGISTERED_RING": uint64(enterRegisteredRing),
		"IORING_OFF_CQ_RING": offCQRing, "IORING_OFF_SQES": offSQEs,
		"IORING_REGISTER_PROBE": registerProbe, "IORING_REGISTER_FILES2": registerFiles2,
		"IORING_REGISTER_RING_FDS": registerRingFds, "IORING_REGISTER_IOWQ_MAX_WORKERS": registerIOWQMaxWorkers,
		"IORING_FILE_INDEX_ALLOC": uint64(FileIndexAlloc), "IORING_TIMEOUT_ETIME_SUCCESS": uint64(TimeoutETimeSuccess),
		"RESOLVE_BENEATH": ResolveBeneath,
	}
	want := map[string]uint64{
		"IORING_OP_NOP": 0, "IORING_OP_READV": 1, "IORING_OP_WRITEV": 2, "IORING_OP_FSYNC": 3,
		"IORING_OP_READ_FIXED": 4, "IORING_OP_WRITE_FIXED": 5, "IORING_OP_TIMEOUT": 11, "IORING_OP_ACCEPT": 13,
		"IORING_OP_ASYNC_CANCEL": 14, "IORING_OP_LINK_TIMEOUT": 15, "IORING_OP_CONNECT": 16,
		"IORING_OP_FALLOCATE": 17, "IORING_OP_OPENAT": 18, "IORING_OP_CLOSE": 19, "IORING_OP_FILES_UPDATE": 20,
		"IORING_OP_STATX": 21, "IORING_OP_READ": 22, "IORING_OP_WRITE": 23, "IORING_OP_SEND": 26,
		"IORING_OP_RECV": 27, "IORING_OP_OPENAT2": 28, "IORING_OP_RENAMEAT": 35, "IORING_OP_UNLINKAT": 36,
		"IORING_OP_MKDIRAT": 37, "IORING_OP_MSG_RING": 40,
		"IOSQE_FIXED_FILE": 1, "IOSQE_IO_DRAIN": 2, "IOSQE_IO_LINK": 4, "IOSQE_IO_HARDLINK": 8,
		"IOSQE_ASYNC": 16, "IOSQE_BUFFER_SELECT": 32, "IOSQE_CQE_SKIP_SUCCESS": 64,
		"IORING_SETUP_SQPOLL": 2, "IORING_SETUP_CQSIZE": 8, "IORING_SETUP_CLAMP": 16,
		"IORING_SETUP_COOP_TASKRUN": 256, "IORING_SETUP_SINGLE_ISSUER": 4096, "IORING_SETUP_DEFER_TASKRUN": 8192,
		"IORING_SETUP_NO_SQARRAY": 65536, "IORING_SETUP_R_DISABLED": 64,
		"IORING_ENTER_EXT_ARG_REG": 64, "IORING_REGISTER_ENABLE_RINGS": 12, "IORING_REGISTER_MEM_REGION": 34,
		"IORING_MEM_REGION_TYPE_USER": 1, "IORING_MEM_REGION_REG_WAIT_ARG": 1, "IORING_REG_WAIT_TS": 1,
		"IORING_FEAT_SINGLE_MMAP": 1, "IORING_FEAT_NODROP": 2, "IORING_FEAT_EXT_ARG": 256, "IORING_FEAT_CQE_SKIP": 2048,
		"IORING_ENTER_GETEVENTS": 1, "IORING_ENTER_SQ_WAKEUP": 2, "IORING_ENTER_EXT_ARG": 8,
		"IORING_ENTER_REGISTERED_RING": 16,
		"IORING_OFF_CQ_RING":           0x8000000, "IORING_OFF_SQES": 0x10000000,
		"IORING_REGISTER_PROBE": 8, "IORING_REGISTER_FILES2": 13, "IORING_REGISTER_RING_FDS": 20,
		"IORING_REGISTER_IOWQ_MAX_WORKERS": 19,
		"IORING_FILE_INDEX_ALLOC":          0xffffffff, "IORING_TIMEOUT_ETIME_SUCCESS": 32, "RESOLVE_BENEATH": 8,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("UAPI constants (-want +got):\n%s", diff)
	}
}
