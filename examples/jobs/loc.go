package main

import (
	"bytes"
	"embed"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
)

// sources is the program's own code, whose job functions' lines are
// counted.
//
//go:embed *.go
var sources embed.FS

// countLines returns the lines of code of every function of the program
// by name: from its func keyword to its closing brace, without blank
// lines and lines holding only a comment.
func countLines() (map[string]int, error) {
	files, err := sources.ReadDir(".")
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	lines := map[string]int{}
	for _, file := range files {
		src, err := sources.ReadFile(file.Name())
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(fset, file.Name(), src, 0)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
				start, end := fset.Position(fd.Pos()).Offset, fset.Position(fd.End()).Offset
				lines[fd.Name.Name] = codeLines(src[start:end])
			}
		}
	}
	return lines, nil
}

func codeLines(src []byte) int {
	n := 0
	for line := range bytes.Lines(src) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && !bytes.HasPrefix(line, []byte("//")) {
			n++
		}
	}
	return n
}

// sumLines adds up the lines of the functions names.
func sumLines(lines map[string]int, names []string) int {
	n := 0
	for _, name := range names {
		l, ok := lines[name]
		if !ok {
			panic(fmt.Sprintf("no function %s to count", name))
		}
		n += l
	}
	return n
}
