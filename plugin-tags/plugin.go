package main

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-tags/internal/store"
)

// Identity, as upstream (CONTRACT 5.0).
const (
	pluginName        = "tags"
	pluginVersion     = "0.1.0"
	pluginDescription = "Device tagging — set, get, delete, list tags for scope evaluation"
)

// Limits checked by set, in bytes, as upstream. The key message says "characters"
// because upstream's does, although it counts bytes.
const (
	maxKeyBytes   = 64
	maxValueBytes = 448
)

// Provenances of the CONSTRAINED / PARTIAL answers.
const (
	provPersistFailed = "tags:persist_failed"
	provLoadFailed    = "tags:load_failed"
)

// keyRE is the key rule of the upstream definition and server. Upstream's plugin left
// it to the server, which drops a bad key silently at Register; we refuse it at set
// (DECISIONS 14).
var keyRE = regexp.MustCompile(`^[a-zA-Z0-9_.:-]+$`)

// tagsPlugin holds the store the agent's configuration points at.
type tagsPlugin struct {
	mu    sync.RWMutex
	store *store.Store
}

func newPlugin() *sdk.Plugin {
	tp := &tagsPlugin{store: store.Open(context.Background(), "", nil)}
	p := sdk.New(pluginName, pluginVersion, pluginDescription)
	p.OnConfigure(tp.configure)
	leg := sdk.Supported(sdk.OSLeg{Support: sdk.SupportSupported, Rung: 1, Mechanism: "local_json_store"})
	p.Handle("set", tp.set, sdk.Describe("Sets a tag: key (at most 64 bytes, [a-zA-Z0-9_.:-]) to value (at most 448 bytes)"), leg)
	p.Handle("get", tp.get, sdk.Describe("Returns one tag's value; an unset key gives an empty value"), leg)
	p.Handle("get_all", tp.getAll, sdk.Describe("Lists every tag, sorted by key, then the count"), leg)
	p.Handle("delete", tp.delete, sdk.Describe("Deletes a tag and says whether it existed"), leg)
	p.Handle("check", tp.check, sdk.Describe("Says whether a tag exists"), leg)
	p.Handle("clear", tp.clear, sdk.Describe("Deletes every tag and says how many there were"), leg)
	p.Handle("count", tp.count, sdk.Describe("Returns the number of tags"), leg)
	return p
}

// configure opens <DataDir>/tags.json, or a memory-only store when the agent gives no
// data dir (as upstream). A file that cannot be loaded does not fail the plugin's
// start: every command then reports it.
func (tp *tagsPlugin) configure(ctx context.Context, cfg sdk.Config) error {
	s := store.Open(ctx, cfg.DataDir, nil)
	tp.mu.Lock()
	tp.store = s
	tp.mu.Unlock()
	return nil
}

func (tp *tagsPlugin) current() *store.Store {
	tp.mu.RLock()
	defer tp.mu.RUnlock()
	return tp.store
}

// read runs fn on the tag map and turns the store's state into the result.
func (tp *tagsPlugin) read(ctx context.Context, req *sdk.Request, out *sdk.Output, fn func(map[string]string)) sdk.Result {
	st, err := tp.current().Read(ctx, req.Log, fn)
	return finish(req, out, st, err)
}

// update runs fn on the tag map, persists it, and turns the store's state into the
// result.
func (tp *tagsPlugin) update(ctx context.Context, req *sdk.Request, out *sdk.Output, fn func(map[string]string)) sdk.Result {
	st, err := tp.current().Update(ctx, req.Log, fn)
	return finish(req, out, st, err)
}

// finish maps the store's answer onto the result. An unreadable store is an error
// (its rows were not written: fn did not run). A failed load wins over a failed
// write: the store is in the load_failed state until a write succeeds, so a
// load_failed mutation also says its write failed.
func finish(req *sdk.Request, out *sdk.Output, st store.State, err error) sdk.Result {
	var unreadable *store.UnreadableError
	switch {
	case errors.As(err, &unreadable):
		return out.Fail("tags store unreadable: " + unreadable.Error())
	case err != nil:
		return out.Fail(err.Error())
	}
	if st.PersistErr != nil && req.Log != nil {
		req.Log.Warn("tags: state not persisted: " + st.PersistErr.Error())
	}
	switch {
	case st.LoadFailed:
		return sdk.Constrained(provLoadFailed)
	case st.PersistErr != nil:
		return sdk.Constrained(provPersistFailed)
	}
	return sdk.OK()
}

// requiredKey returns the key parameter, or false after writing the error row.
func requiredKey(req *sdk.Request, out *sdk.Output) (string, bool) {
	key, err := req.Params.Required("key")
	if err != nil {
		out.Error(err.Error())
		return "", false
	}
	return key, true
}

func (tp *tagsPlugin) set(ctx context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
	key, ok := requiredKey(req, out)
	if !ok {
		return sdk.Failed()
	}
	if len(key) > maxKeyBytes {
		return out.Failf("key exceeds %d characters", maxKeyBytes)
	}
	if !keyRE.MatchString(key) {
		return out.Fail("invalid key: " + key)
	}
	value := req.Params.Get("value", "")
	if len(value) > maxValueBytes {
		return out.Failf("value exceeds %d bytes", maxValueBytes)
	}
	// Rows are written after the store answered, so an unreadable store gives only
	// its error row.
	res := tp.update(ctx, req, out, func(tags map[string]string) { tags[key] = value })
	if res.Code == 0 {
		out.Row("tag_set", key, value)
	}
	return res
}

func (tp *tagsPlugin) get(ctx context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
	key, ok := requiredKey(req, out)
	if !ok {
		return sdk.Failed()
	}
	var value string
	res := tp.read(ctx, req, out, func(tags map[string]string) { value = tags[key] })
	if res.Code == 0 {
		out.Row("tag", key, value)
	}
	return res
}

func (tp *tagsPlugin) getAll(ctx context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
	type tag struct{ key, value string }
	var all []tag
	res := tp.read(ctx, req, out, func(tags map[string]string) {
		for k, v := range tags {
			all = append(all, tag{k, v})
		}
	})
	if res.Code != 0 {
		return res
	}
	// Upstream iterates a hash map; sorting by key makes the answer deterministic.
	slices.SortFunc(all, func(a, b tag) int {
		switch {
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	for _, t := range all {
		out.Row("tag", t.key, t.value)
	}
	out.Row("count", strconv.Itoa(len(all)))
	return res
}

func (tp *tagsPlugin) delete(ctx context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
	key, ok := requiredKey(req, out)
	if !ok {
		return sdk.Failed()
	}
	var found bool
	res := tp.update(ctx, req, out, func(tags map[string]string) {
		_, found = tags[key]
		delete(tags, key)
	})
	if res.Code == 0 {
		out.Row("tag_deleted", key, strconv.FormatBool(found))
	}
	return res
}

func (tp *tagsPlugin) check(ctx context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
	key, ok := requiredKey(req, out)
	if !ok {
		return sdk.Failed()
	}
	var found bool
	res := tp.read(ctx, req, out, func(tags map[string]string) { _, found = tags[key] })
	if res.Code == 0 {
		out.Row("tag_exists", key, strconv.FormatBool(found))
	}
	return res
}

func (tp *tagsPlugin) clear(ctx context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
	var n int
	res := tp.update(ctx, req, out, func(tags map[string]string) {
		n = len(tags)
		clear(tags)
	})
	if res.Code == 0 {
		out.Row("tags_cleared", strconv.Itoa(n))
	}
	return res
}

func (tp *tagsPlugin) count(ctx context.Context, req *sdk.Request, out *sdk.Output) sdk.Result {
	var n int
	res := tp.read(ctx, req, out, func(tags map[string]string) { n = len(tags) })
	if res.Code == 0 {
		out.Row("count", strconv.Itoa(n))
	}
	return res
}
