package sources

import (
	"bytes"
	"errors"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"syscall"
	"unicode/utf8"

	"github.com/agentbridge/agentbridge/proc"
)

// read reads the file from its offset and delivers its complete lines: to
// EOF during a scan (rebuild), else one slice, leaving the file in t.more
// when there is more. A smaller size than the offset (truncation), another
// inode at the path (replacement) or other bytes before the offset than
// were read (an in-place rewrite: a writer that removed or moved records
// and wrote the rest back) reads it again from 0 after Truncated. Holes of
// a sparse file too long to be part of a line are skipped, not read; more
// than MaxJournal unread bytes are not read at all.
//
// The rewrite check costs no system call of its own: each read(2) starts
// min(offset, tailSum) bytes before the offset, and the hash of those
// bytes is compared with the one kept from the last read. An append
// leaves them as they were; a writer that truncates a file and writes it
// again, shorter or longer, or that moves records, changes them. (A
// rewrite that leaves the last tailSum bytes before the offset exactly as
// they were is not seen, and needs none: what follows them is read.)
func (t *Tailer) read(p string, f *file) {
	// openJournal: never wait for a FIFO's writer nor follow a link.
	fd, err := os.OpenFile(p, os.O_RDONLY|openJournal, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			delete(t.files, p)
			if f.ino != 0 {
				t.h.Removed(p)
			}
			return
		}
		t.fsErr(err, "a journal cannot be read")
		return
	}
	defer fd.Close()
	t.opens.Add(1)
	activity.reads.Add(1)
	fi, err := fd.Stat()
	if err != nil {
		t.fsErr(err, "a journal cannot be read")
		return
	}
	if !fi.Mode().IsRegular() {
		delete(t.files, p)
		if f.ino != 0 {
			t.h.Removed(p)
		}
		return
	}
	k, _ := proc.KeyOf(fi)
	dev, ino := k.Dev, k.Ino
	if f.ino != 0 && (dev != f.dev || ino != f.ino || fi.Size() < f.off) {
		t.log.Debug("journal truncated or replaced", "path", p)
		t.restart(p, f)
	}
	f.dev, f.ino = dev, ino
	size := fi.Size()
	check := f.summed && f.off > 0 && !t.nocheck
	if size == f.off && !check {
		return
	}
	if size-f.off > t.cfg.MaxJournal {
		t.fromEnd(fd, f, size)
		return
	}
	var read int64
	for {
		if !t.scan && read >= t.slice {
			t.more[p] = struct{}{} // the rest after a look at everything else
			return
		}
		if t.ctx.Err() != nil {
			return
		}
		if !check {
			// (With a check pending, the bytes before the offset come
			// first; a hole after it is skipped at the next turn.)
			t.skipHole(fd, f, size)
		}
		k := 0
		if !t.nocheck {
			k = int(min(f.off, tailSum))
		}
		n, err := fd.ReadAt(t.buf, f.off-int64(k))
		t.bytesIn.Add(uint64(n))
		if check {
			check = false
			if n < k || maphash.Bytes(t.seed, t.buf[:k]) != f.sum {
				t.log.Debug("journal rewritten in place", "path", p)
				t.rewrites.Add(1)
				t.restart(p, f)
				f.dev, f.ino = dev, ino
				continue
			}
		}
		if n > k {
			f.off += int64(n - k)
			read += int64(n - k)
			if !t.nocheck {
				w := int(min(f.off, tailSum))
				f.sum, f.summed = maphash.Bytes(t.seed, t.buf[n-w:n]), true
			}
			t.split(p, f, t.buf[k:n])
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.fsErr(err, "a journal cannot be read")
			}
			return
		}
	}
}

// restart forgets what was read of f and tells the Handler, which reads
// it again from offset 0 next.
func (t *Tailer) restart(p string, f *file) {
	t.dropPart(f)
	*f = file{}
	t.h.Truncated(p)
}

// split delivers the complete lines of data, joining the file's partial
// line, and keeps the new trailing fragment.
func (t *Tailer) split(p string, f *file, data []byte) {
	max := t.cfg.MaxLine
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if f.skip {
				return
			}
			if len(f.part)+len(data) > max {
				t.longLine(p, f, data)
				t.tooLong(f)
				return
			}
			if !t.hold(f, data) {
				t.dropPart(f)
				f.skip = true
				t.count(CodeHeldLimit)
			}
			return
		}
		line := data[:i]
		data = data[i+1:]
		if f.skip {
			f.skip = false
			continue
		}
		if len(f.part) > 0 {
			if len(f.part)+len(line) > max {
				t.longLine(p, f, line)
				t.tooLong(f)
				f.skip = false
				continue
			}
			if !t.hold(f, line) {
				t.dropPart(f)
				t.count(CodeHeldLimit)
				continue
			}
			t.deliver(p, f.part)
			if cap(f.part) > 64<<10 {
				t.dropPart(f) // don't keep a big buffer per file
			} else {
				f.part = f.part[:0]
			}
			continue
		}
		if len(line) > max {
			t.longLine(p, f, line)
			t.tooLong(f)
			f.skip = false
			continue
		}
		t.deliver(p, line)
	}
}

// longLine gives a Handler that implements LongLines the head of the line
// that f's unfinished part and more begin, before it is skipped.
func (t *Tailer) longLine(p string, f *file, more []byte) {
	ll, ok := t.h.(LongLines)
	if !ok {
		return
	}
	head := f.part[:min(len(f.part), LongLineHead)]
	if n := LongLineHead - len(head); n > 0 && len(more) > 0 {
		head = append(head[:len(head):len(head)], more[:min(len(more), n)]...) // a copy: f.part is not grown
	}
	ll.LongLine(p, head)
}

func (t *Tailer) tooLong(f *file) {
	t.dropPart(f)
	f.skip = true
	t.count(CodeLineTooLong)
}

func (t *Tailer) deliver(p string, line []byte) {
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	if len(line) == 0 {
		return
	}
	if !utf8.Valid(line) {
		t.count(CodeInvalidUTF8)
		return
	}
	t.h.Line(p, line)
}
