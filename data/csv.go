package data

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// CSVOptions say how a CSV file is laid out.
type CSVOptions struct {
	// Header says the first row names the columns.
	Header bool
	// DetectHeader takes the first row for a header when any of its fields
	// is not a number (Header is then ignored).
	DetectHeader bool
	// LabelColumn is the column that holds the labels: a name of the
	// header row, or a column number counted from 0. "" means no labels:
	// every column is a feature.
	LabelColumn string
}

// csvTable is a decoded CSV file: rows x cols features, row-major, and the
// labels when there is a label column.
type csvTable struct {
	x          []float32
	labels     []int64
	rows, cols int
}

// readCSV decodes CSV from r, streaming: one record at a time. Every field
// but the label column's must be a finite number (in float32 too); labels
// must be integers; every row must have as many fields as the first.
// limit > 0 stops after limit rows. Errors are one line naming the line and
// column but not the file.
func readCSV(r io.Reader, opt CSVOptions, limit int) (*csvTable, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = 0 // the first record sets it
	t := &csvTable{}
	label := -1
	first := true
	var names []string
	for limit <= 0 || t.rows < limit {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				if errors.Is(pe.Err, csv.ErrFieldCount) {
					return nil, malformedf("line %d: %d fields, want %d as in the first row", pe.StartLine, len(rec), cr.FieldsPerRecord)
				}
				return nil, malformedf("line %d, column %d: %v", pe.StartLine, pe.Column, pe.Err)
			}
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			header := opt.Header
			if opt.DetectHeader {
				header = slices.ContainsFunc(rec, func(f string) bool {
					_, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
					return err != nil
				})
			}
			if header {
				names = slices.Clone(rec)
			}
			if label, err = labelIndex(opt.LabelColumn, names, len(rec)); err != nil {
				return nil, err
			}
			t.cols = len(rec)
			if label >= 0 {
				t.cols--
			}
			if t.cols == 0 {
				return nil, malformedf("line %d: no feature columns", line)
			}
			if header {
				continue
			}
		}
		for j, f := range rec {
			f = strings.TrimSpace(f)
			if j == label {
				l, err := strconv.ParseInt(f, 10, 64)
				if err != nil {
					if v, ferr := strconv.ParseFloat(f, 64); ferr == nil && v == math.Trunc(v) && math.Abs(v) < 1<<53 {
						l, err = int64(v), nil // 3.0
					}
				}
				if err != nil {
					return nil, malformedf("line %d, column %d%s: label %q, want an integer", line, j+1, colName(names, j), f)
				}
				t.labels = append(t.labels, l)
				continue
			}
			v, err := strconv.ParseFloat(f, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) {
				return nil, malformedf("line %d, column %d%s: %q is not a number", line, j+1, colName(names, j), f)
			}
			x := float32(v)
			if math.IsNaN(v) || math.IsInf(float64(x), 0) {
				return nil, malformedf("line %d, column %d%s: %q, want a finite number (float32)", line, j+1, colName(names, j), f)
			}
			t.x = append(t.x, x)
		}
		t.rows++
	}
	if first {
		return nil, malformedf("empty, want rows of numbers")
	}
	return t, nil
}

// colName is " (name)" for column j of a header, or "".
func colName(names []string, j int) string {
	if j < len(names) {
		return fmt.Sprintf(" (%s)", printable(names[j]))
	}
	return ""
}

// printable is s, or s quoted when it holds anything but printable
// characters (an error stays one line).
func printable(s string) string {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// labelIndex finds the label column: a header name, or a number from 0.
func labelIndex(col string, names []string, fields int) (int, error) {
	if col == "" {
		return -1, nil
	}
	if i := slices.Index(names, col); i >= 0 {
		return i, nil
	}
	i, err := strconv.Atoi(col)
	switch {
	case err == nil && i >= 0 && i < fields:
		return i, nil
	case err == nil:
		return -1, malformedf("label column %d: the rows have %d columns (numbered from 0)", i, fields)
	case names == nil:
		return -1, malformedf("label column %q: without a header row the label column must be a number (0 = the first)", col)
	}
	shown := make([]string, len(names))
	for i, n := range names {
		shown[i] = printable(n)
	}
	return -1, malformedf("label column %q is not in the header row (%s)", col, strings.Join(shown, ", "))
}

// readCSVFile decodes the CSV file at path. Errors name the file.
func readCSVFile(path string, opt CSVOptions, limit int) (*csvTable, error) {
	f, _, err := openFile(path, "a CSV file")
	if err != nil {
		return nil, fmt.Errorf("csv file %s: %w", path, err)
	}
	defer f.Close()
	t, err := readCSV(f, opt, limit)
	if err != nil {
		return nil, fmt.Errorf("csv file %s: %w", path, err)
	}
	return t, nil
}
