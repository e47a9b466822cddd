package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// The registration's tags come from the tags plugin through the plugin protocol, as
// any command's rows do: its get_all action writes one `tag|<key>|<value>` row per tag
// and then `count|<n>`. The agent does not know where or how the plugin keeps them.
const (
	tagsPlugin = "tags"
	tagsAction = "get_all"
	// tagsTimeout bounds the read, within the registration's own 30 s.
	tagsTimeout = 10 * time.Second
	// maxTagsBytes bounds what the agent keeps of the answer, keys and values
	// together: the tags plugin's own cap on its store (16 MiB), so every set of tags
	// it accepts fits.
	maxTagsBytes = 16 << 20
)

// deviceTags returns the device's tags for AgentInfo.scopable_tags, read afresh for
// every registration. With no tags plugin, or when its answer is not a whole one (the
// plugin cannot start, fails, says its answer is partial, or the rows do not add up),
// the agent registers without tags rather than with wrong ones, and logs why once
// until the reason changes.
func (s *Session) deviceTags(ctx context.Context) map[string]string {
	tags, err := s.readTags(ctx)
	why := ""
	if err != nil {
		why = rows.Printable(err.Error())
		tags = nil
	}
	s.mu.Lock()
	changed := why != s.tagsWhy
	s.tagsWhy = why
	s.mu.Unlock()
	switch {
	case changed && errors.Is(err, errNoTagsPlugin):
		s.log.Info("registering without tags", "reason", why)
	case changed && why != "":
		s.log.Warn("registering without tags", "error", why)
	case changed:
		s.log.Info("registering with tags again")
	}
	return tags
}

var errNoTagsPlugin = errors.New("no tags plugin")

// readTags runs the tags plugin's get_all and gathers its rows.
func (s *Session) readTags(ctx context.Context) (map[string]string, error) {
	if !s.o.Plugins.Has(tagsPlugin) {
		return nil, errNoTagsPlugin
	}
	for _, st := range s.o.Plugins.Status() {
		if st.Name == tagsPlugin && !st.State.Ready() {
			detail := string(st.State)
			if st.LastError != "" {
				detail += ": " + st.LastError
			}
			return nil, fmt.Errorf("the tags plugin is not ready (%s)", detail)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, tagsTimeout)
	defer cancel()
	g := tagRows{tags: map[string]string{}, count: -1}
	res, err := s.o.Plugins.Execute(ctx, supervisor.Request{
		Plugin:    tagsPlugin,
		Command:   host.Command{Action: tagsAction},
		Timeout:   tagsTimeout,
		ParkAfter: true,
	}, g.add)
	if err != nil {
		return nil, fmt.Errorf("tags %s: %w", tagsAction, err)
	}
	return g.result(res)
}

// tagRows gathers the rows of get_all; it starts with an empty map and count -1.
type tagRows struct {
	tags  map[string]string
	bytes int
	count int // the count row's number; -1 until it has come
	fail  string
	err   error
}

// add takes one batch of rows; it refuses the rest of the answer once it is wrong.
func (g *tagRows) add(batch []string) error {
	for _, row := range batch {
		if g.err != nil {
			return g.err
		}
		g.err = g.row(row)
	}
	return g.err
}

func (g *tagRows) row(row string) error {
	f := rows.Split(row, 3)
	switch {
	case f[0] == "error" && len(f) >= 2:
		g.fail = row[len("error|"):]
		return nil
	case f[0] == "tag" && len(f) == 3:
		if g.count >= 0 {
			return errors.New("a tag row after the count")
		}
		if _, dup := g.tags[f[1]]; dup {
			return fmt.Errorf("tag %q listed twice", f[1])
		}
		g.bytes += len(f[1]) + len(f[2])
		if g.bytes > maxTagsBytes {
			return fmt.Errorf("more than %d bytes of tags", maxTagsBytes)
		}
		g.tags[f[1]] = f[2]
		return nil
	case f[0] == "count" && len(f) == 2:
		n, err := strconv.Atoi(f[1])
		if err != nil || g.count >= 0 {
			return fmt.Errorf("unexpected row %q", row)
		}
		g.count = n
		return nil
	}
	return fmt.Errorf("unexpected row %q", rows.Printable(row))
}

// result checks the whole answer: rc 0, not partial, every tag and then their count.
func (g *tagRows) result(res sdk.Result) (map[string]string, error) {
	switch {
	case g.err != nil:
		return nil, fmt.Errorf("tags %s: %w", tagsAction, g.err)
	case res.Code != 0 && g.fail != "":
		return nil, fmt.Errorf("tags %s: %s", tagsAction, g.fail)
	case res.Code != 0:
		return nil, fmt.Errorf("tags %s: rc %d", tagsAction, res.Code)
	case res.Completeness == sdk.CompletenessPartial:
		return nil, fmt.Errorf("tags %s: the answer is partial (%s)", tagsAction, res.Provenance)
	case g.count != len(g.tags):
		return nil, fmt.Errorf("tags %s: %d tag rows, but the count says %d", tagsAction, len(g.tags), g.count)
	}
	return g.tags, nil
}
