package zk

// ejserver's fork: ZooKeeper 3.6's multiRead (opcode 22), which go-zookeeper v1.0.4 does not speak. See
// FORK.md for the whole difference to v1.0.4.

import "reflect"

// ReadOp is one read of a MultiRead: the node's data and stat, or its children when Children is set.
type ReadOp struct {
	Path     string
	Children bool
}

// ReadResult is one read's answer: Data and Stat (a data read) or Children (a children read), or Err
// (ErrNoNode for an absent node, ...).
type ReadResult struct {
	Data     []byte
	Stat     *Stat
	Children []string
	Err      error
}

// MultiRead sends many reads as one request and returns their answers in order. Unlike Multi it is not a
// transaction: each read succeeds or fails on its own (an absent node is that read's ErrNoNode), and the
// reads set no watch. The server answers them together, from one state of its tree. ZooKeeper before 3.6
// answers ErrUnimplemented.
func (c *Conn) MultiRead(ops ...ReadOp) ([]ReadResult, error) {
	for _, op := range ops {
		if err := validatePath(op.Path, false); err != nil {
			return nil, err
		}
	}
	res := &multiReadResponse{}
	_, err := c.request(opMultiRead, &multiReadRequest{ops: ops}, res, nil)
	if err != nil {
		return nil, err
	}
	if len(res.results) != len(ops) {
		return nil, ErrAPIError
	}
	return res.results, nil
}

type multiReadRequest struct{ ops []ReadOp }

// readOpRequest is ZooKeeper's GetDataRequest and GetChildrenRequest (path, watch).
type readOpRequest struct {
	Path  string
	Watch bool
}

func (r *multiReadRequest) Encode(buf []byte) (int, error) {
	total := 0
	for _, op := range r.ops {
		typ := int32(opGetData)
		if op.Children {
			typ = opGetChildren
		}
		for _, v := range []interface{}{multiHeader{Type: typ, Done: false, Err: -1}, readOpRequest{Path: op.Path}} {
			n, err := encodePacketValue(buf[total:], reflect.ValueOf(v))
			if err != nil {
				return total, err
			}
			total += n
		}
	}
	n, err := encodePacketValue(buf[total:], reflect.ValueOf(multiHeader{Type: -1, Done: true, Err: -1}))
	return total + n, err
}

type multiReadResponse struct{ results []ReadResult }

func (r *multiReadResponse) Decode(buf []byte) (int, error) {
	total := 0
	for {
		var header multiHeader
		n, err := decodePacketValue(buf[total:], reflect.ValueOf(&header))
		if err != nil {
			return total, err
		}
		total += n
		if header.Done {
			return total, nil
		}
		var res ReadResult
		var w interface{}
		switch header.Type {
		case opGetData:
			w = &getDataResponse{}
		case opGetChildren:
			w = &getChildrenResponse{}
		case opError:
			w = &errorResponse{}
		default:
			return total, ErrAPIError
		}
		n, err = decodePacketValue(buf[total:], reflect.ValueOf(w))
		if err != nil {
			return total, err
		}
		total += n
		switch v := w.(type) {
		case *getDataResponse:
			st := v.Stat
			res.Data, res.Stat = v.Data, &st
		case *getChildrenResponse:
			res.Children = v.Children
		case *errorResponse:
			res.Err = ErrCode(v.Err).toError()
		}
		r.results = append(r.results, res)
	}
}
