package config

import (
	"encoding"
	"fmt"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"
)

// YAML returns c as a config file that names every key, in the order of
// the Config struct, at its value in c: `master config` prints it, and Load
// reads it back to the same values. File is left out; Name is written as
// it is, so that the file's own base name no longer matters.
func (c *Config) YAML() ([]byte, error) {
	n, err := structNode(reflect.ValueOf(*c))
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(n)
}

// structNode is the mapping of a struct's mapstructure keys to their
// values; a key holding a section (a struct that is not a value of its
// own) is a mapping in turn.
func structNode(v reflect.Value) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode}
	t := v.Type()
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("mapstructure")
		if tag == "" || tag == "-" {
			continue
		}
		val, err := valueNode(v.Field(i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tag, err)
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: tag}, val)
	}
	return n, nil
}

// valueNode is one value as a config file spells it: an enum by its name,
// a duration like 1m0s, a list of numbers in flow style ([784, 500]).
func valueNode(v reflect.Value) (*yaml.Node, error) {
	if m, ok := v.Interface().(encoding.TextMarshaler); ok {
		b, err := m.MarshalText()
		if err != nil {
			return nil, err
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(b)}, nil
	}
	if d, ok := v.Interface().(time.Duration); ok {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: d.String()}, nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return structNode(v)
	case reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		if k := v.Type().Elem().Kind(); k != reflect.Struct && k != reflect.Interface {
			n.Style = yaml.FlowStyle
		}
		for i := range v.Len() {
			item, err := valueNode(v.Index(i))
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			n.Content = append(n.Content, item)
		}
		return n, nil
	}
	n := &yaml.Node{}
	if err := n.Encode(v.Interface()); err != nil {
		return nil, err
	}
	flowScalars(n)
	return n, nil
}

// flowScalars writes every list of scalars below n (a swept dbn.layers'
// values, say) in flow style.
func flowScalars(n *yaml.Node) {
	scalars := n.Kind == yaml.SequenceNode
	for _, c := range n.Content {
		flowScalars(c)
		scalars = scalars && c.Kind == yaml.ScalarNode
	}
	if scalars {
		n.Style = yaml.FlowStyle
	}
}
