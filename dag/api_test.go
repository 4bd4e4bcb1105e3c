package dag

import "time"

// The API the engine (submit) relies on, checked at compile time.
var (
	_ func(Op) string                    = Op.String
	_ func(*Graph) string                = (*Graph).Name
	_ func(*Graph) int                   = (*Graph).Len
	_ func(*Graph, int32) Node           = (*Graph).Node
	_ func(*Graph, string) (int32, bool) = (*Graph).Index
	_ func(*Graph, int32) []Edge         = (*Graph).Preds
	_ func(*Graph, int32) []Edge         = (*Graph).Succs
	_ func(*Graph) []FileSpec            = (*Graph).Files
	_ func(*Graph) []int32               = (*Graph).Order
	_ func(*Graph, int32) int            = (*Graph).Level
	_ func(*Graph) [][]int32             = (*Graph).Levels
	_ func(*Graph) int                   = (*Graph).Width
	_ func(*Graph) []int32               = (*Graph).CriticalPath
	_ func(*Graph) [][]int32             = (*Graph).Components
	_ func(*Graph, int32) int            = (*Graph).Component
	_                                    = []Op{OpNop, OpRead, OpWrite, OpFsync, OpOpen, OpStatx, OpClose, OpTimeout, OpUnlink, OpMkdir, OpRename, OpReadFile, OpGo}
	_                                    = []EdgeKind{After, Finally, OnFailure}
	_                                    = Edge{Node: int32(0), Kind: After}
	_                                    = FileSpec{Name: "", Size: int64(0), Fill: byte(0), Direct: false, Dir: &DirSpec{Count: 0, MinSize: int64(0), MaxSize: int64(0), Seed: int64(0)}}
	_                                    = Node{ID: "", Op: OpNop, File: "", Handle: "", As: "", Path: "", To: "", OpenFlags: 0, Mode: uint32(0),
		Offset: int64(0), Len: int64(0), LenFrom: int32(-1), Fill: byte(0), NS: int64(0), Timeout: time.Duration(0), AllowShort: false, Async: false, Buf: []byte(nil),
		Keep: false, OffsetAt: Source{Node: int32(0), At: int64(0), Size: int8(0)}, LenAt: Source{},
		Bind: func(Inputs, *Params) error { return nil }, Then: func(Inputs, Result) error { return nil }, Func: func(Inputs) error { return nil }}
)
