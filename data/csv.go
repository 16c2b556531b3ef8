package data

import (
	"bufio"
	"bytes"
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
	// DetectHeader takes the first row for a header when none of its
	// fields is a number (Header is then ignored). A first row that holds
	// a number is data, so that a data row with a bad field is reported,
	// never dropped as a header.
	DetectHeader bool
	// LabelColumn is the column that holds the labels: a name of the
	// header row, or a column index counted from 0. "" means no labels:
	// every column is a feature.
	LabelColumn string
}

// csvTable is a decoded CSV file: rows x cols features, row-major, and the
// labels when there is a label column.
type csvTable struct {
	x          []float32
	labels     []int64
	rows, cols int
	// header is the header row's names, nil when the first row is data.
	header []string
}

// utf8BOM is the byte-order mark some programs (Excel, PowerShell, Notepad)
// put before UTF-8 text; it is no part of the first field.
var utf8BOM = []byte("\xef\xbb\xbf")

// skipBOM returns r without a leading UTF-8 byte-order mark.
func skipBOM(r io.Reader) io.Reader {
	br := bufio.NewReader(r)
	if b, err := br.Peek(len(utf8BOM)); err == nil && bytes.Equal(b, utf8BOM) {
		br.Discard(len(utf8BOM))
	}
	return br
}

// isNumber reports whether a CSV field spells a number.
func isNumber(f string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
	return err == nil || errors.Is(err, strconv.ErrRange)
}

// readCSV decodes CSV from r, streaming: one record at a time. Every field
// but the label column's must be a finite number (in float32 too); labels
// must be integers; every row must have as many fields as the first. A
// leading UTF-8 byte-order mark is skipped. limit > 0 stops after limit
// rows. Errors are one line naming the line and column (an index from 0,
// as LabelColumn counts) but not the file.
func readCSV(r io.Reader, opt CSVOptions, limit int) (*csvTable, error) {
	cr := csv.NewReader(skipBOM(r))
	cr.ReuseRecord = true
	cr.TrimLeadingSpace = true
	cr.FieldsPerRecord = 0 // the first record sets it
	t := &csvTable{}
	label := -1
	first := true
	for limit <= 0 || t.rows < limit {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvReadError(err, len(rec), cr.FieldsPerRecord)
		}
		line, _ := cr.FieldPos(0)
		// hint says why a bad first row was taken as data.
		hint := ""
		if first {
			first = false
			var header bool
			if label, header, hint, err = t.firstRow(rec, opt, line); err != nil {
				return nil, err
			}
			if header {
				continue
			}
		}
		if err := t.appendRow(rec, label, line, hint); err != nil {
			return nil, err
		}
	}
	if first {
		return nil, malformedf("empty, want rows of numbers")
	}
	return t, nil
}

// csvReadError is the error of a record the CSV reader could not read:
// one line naming the line, with the row's fields and the first row's
// (want) for a row of another length.
func csvReadError(err error, fields, want int) error {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return err
	}
	if errors.Is(pe.Err, csv.ErrFieldCount) {
		return malformedf("line %d: %d fields, want %d as in the first row", pe.StartLine, fields, want)
	}
	return malformedf("line %d, byte %d: %v", pe.StartLine, pe.Column, pe.Err)
}

// firstRow reads the first row, rec at line: whether it is a header (then
// t.header holds its names), the label column's index (-1: none), the
// number of feature columns (t.cols), and the hint that an error in the
// row, if it is data, should carry.
func (t *csvTable) firstRow(rec []string, opt CSVOptions, line int) (label int, header bool, hint string, err error) {
	header = opt.Header
	if opt.DetectHeader {
		header = !slices.ContainsFunc(rec, isNumber)
	}
	if header {
		t.header = slices.Clone(rec)
	} else if opt.DetectHeader {
		hint = " (the first row holds numbers, so it is data: a header row names every column)"
	} else {
		hint = " (the first row is data: is it a header?)"
	}
	if label, err = labelIndex(opt.LabelColumn, t.header, len(rec)); err != nil {
		return -1, false, "", err
	}
	t.cols = len(rec)
	if label >= 0 {
		t.cols--
	}
	if t.cols == 0 {
		return -1, false, "", malformedf("line %d: no feature columns", line)
	}
	return label, header, hint, nil
}

// appendRow decodes rec, the data row at line, onto t: the label column's
// field (label; -1: none) as a label, every other as a feature. hint goes
// with an error in a field that is not a number.
func (t *csvTable) appendRow(rec []string, label, line int, hint string) error {
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
				if isNumber(f) {
					hint = ""
				}
				return malformedf("line %d, %s: label %q, want an integer%s", line, colName(t.header, j), f, hint)
			}
			t.labels = append(t.labels, l)
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return malformedf("line %d, %s: %q is not a number%s", line, colName(t.header, j), f, hint)
		}
		x := float32(v)
		if math.IsNaN(v) || math.IsInf(float64(x), 0) {
			return malformedf("line %d, %s: %q, want a finite number (float32)", line, colName(t.header, j), f)
		}
		t.x = append(t.x, x)
	}
	t.rows++
	return nil
}

// colName names column j: "column index j", with " (name)" from a header.
// The index counts from 0, as a label column's number does.
func colName(names []string, j int) string {
	if j < len(names) {
		return fmt.Sprintf("column index %d (%s)", j, printable(names[j]))
	}
	return fmt.Sprintf("column index %d", j)
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

// labelIndex finds the label column: a header name, or a column index from 0.
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
		return -1, malformedf("label column index %d: the rows have %d columns, indices 0..%d", i, fields, fields-1)
	case names == nil:
		return -1, malformedf("label column %q: without a header row the label column must be a column index (0 = the first)", col)
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

// CSVRows counts the data rows of the CSV file at path, not its header row
// when header is set, stopping at limit (limit <= 0: all): how many examples a
// limit may keep at most, without decoding the values. A file that cannot
// be read gives an error, as its loader would.
func CSVRows(path string, header bool, limit int) (int, error) {
	f, _, err := openFile(path, "a CSV file")
	if err != nil {
		return 0, fmt.Errorf("csv file %s: %w", path, err)
	}
	defer f.Close()
	cr := csv.NewReader(skipBOM(f))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1 // the loader reports ragged rows
	n := 0
	if header {
		n = -1
	}
	for limit <= 0 || n < limit {
		if _, err := cr.Read(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return 0, fmt.Errorf("csv file %s: %w", path, err)
		}
		n++
	}
	return max(n, 0), nil
}
