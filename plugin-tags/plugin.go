package main

import (
	"context"
	"embed"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/yuzugo/yuzu/sdk"

	"github.com/yuzugo/yuzu/plugin-tags/internal/store"
)

// Identity, as upstream.
const (
	pluginName        = "tags"
	pluginVersion     = "0.1.0"
	pluginDescription = "Device tagging — set, get, delete, list tags for scope evaluation"
)

// Provenances of the CONSTRAINED / PARTIAL answers.
const (
	provPersistFailed = "tags:persist_failed"
	provLoadFailed    = "tags:load_failed"
)

// keyPattern is the key rule of the definition and the fleet server. Upstream's plugin
// left it to the server, which drops a bad key silently at Register; we refuse it at
// set (docs/tags.md).
const keyPattern = `^[a-zA-Z0-9_.:\-]+$`

// definitions are the device.tags.* InstructionDefinitions, shipped inside the binary.
//
//go:embed definitions/*.yaml
var definitions embed.FS

// tagsPlugin holds the store the agent's configuration points at.
type tagsPlugin struct {
	mu    sync.RWMutex
	store *store.Store
}

// keyParam declares the key every keyed action takes. The limits count bytes; the
// message says "characters" because upstream's does.
func keyParam(extra ...sdk.ParamOption) sdk.ActionOption {
	opts := append([]sdk.ParamOption{sdk.Required(), sdk.MaxLength(64),
		sdk.Message(sdk.RuleMaxLength, "key exceeds 64 characters")}, extra...)
	return sdk.Param("key", sdk.TypeString, "Tag key, at most 64 bytes", opts...)
}

func newPlugin() *sdk.Plugin {
	tp := &tagsPlugin{store: store.Open(context.Background(), "", nil)}
	p := sdk.New(pluginName, pluginVersion, pluginDescription)
	p.Vendor = "device" // the SDK derives the definitions device.tags.<action>; definitions/ adds what Go cannot say
	p.OnConfigure(tp.configure)
	support := sdk.OnAll(sdk.OSSupport{Level: sdk.SupportSupported, Rung: 1, Mechanism: "local_json_store"})
	p.Handle("set", tp.set, sdk.Describe("Sets a tag: key (at most 64 bytes, [a-zA-Z0-9_.:-]) to value (at most 448 bytes)"),
		keyParam(sdk.Pattern(keyPattern), sdk.Message(sdk.RulePattern, "invalid key: {value}")),
		sdk.Param("value", sdk.TypeString, "Tag value, at most 448 bytes; absent means empty", sdk.MaxLength(448),
			sdk.Message(sdk.RuleMaxLength, "value exceeds 448 bytes")),
		sdk.Row("tag_set", "key", "value"), support)
	p.Handle("get", tp.get, sdk.Describe("Returns one tag's value; an unset key gives an empty value"),
		keyParam(), sdk.Row("tag", "key", "value"), support)
	p.Handle("get_all", tp.getAll, sdk.Describe("Lists every tag, sorted by key, then the count"),
		sdk.Row("tag", "key", "value"), sdk.Row("count", "count:int32"), support)
	p.Handle("delete", tp.delete, sdk.Describe("Deletes a tag and says whether it existed"),
		keyParam(), sdk.Row("tag_deleted", "key", "found:bool"), support)
	p.Handle("check", tp.check, sdk.Describe("Says whether a tag exists"),
		keyParam(), sdk.Row("tag_exists", "key", "exists:bool"), support)
	p.Handle("clear", tp.clear, sdk.Describe("Deletes every tag and says how many there were"),
		sdk.Row("tags_cleared", "cleared_count:int32"), support)
	p.Handle("count", tp.count, sdk.Describe("Returns the number of tags"),
		sdk.Row("count", "count:int32"), support)
	p.Definitions(definitions, "definitions")
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

// finish maps the store's answer onto the result. An unreadable store and a refused
// change are errors (their rows were not written: fn did not run, or its result was
// dropped), logged as well so the agent's log tells which file was refused. A failed
// load wins over a failed write: the store is in the load_failed state until a write
// by a later call succeeds, so a load_failed mutation may also have failed its write
// (the log line says so).
func finish(req *sdk.Request, out *sdk.Output, st store.State, err error) sdk.Result {
	var (
		unreadable *store.UnreadableError
		full       *store.FullError
	)
	switch {
	case errors.As(err, &unreadable):
		logWarn(req, "tags: store unreadable: "+unreadable.Error())
		return out.Fail("tags store unreadable: " + unreadable.Error())
	case errors.As(err, &full):
		logWarn(req, "tags: change refused: "+full.Error())
		return out.Fail(full.Error())
	case err != nil:
		return out.Fail(err.Error())
	}
	if st.PersistErr != nil {
		logWarn(req, "tags: state not persisted: "+st.PersistErr.Error())
	}
	switch {
	case st.LoadFailed:
		return sdk.Partial(provLoadFailed)
	case st.PersistErr != nil:
		return sdk.Partial(provPersistFailed)
	}
	return sdk.Done()
}

// logWarn writes msg on the command's log, which the agent keeps.
func logWarn(req *sdk.Request, msg string) {
	if req.Log != nil {
		req.Log.Warn(msg)
	}
}

// The SDK has checked the declared parameters before any handler runs: key is present,
// not empty and within its limits (set: and of the allowed characters), value within
// its limit.

func (tp *tagsPlugin) set(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	key, value := req.Params.Get("key", ""), req.Params.Get("value", "")
	// Rows are written after the store answered, so an unreadable store gives only
	// its error row.
	res := tp.update(ctx, req, out, func(tags map[string]string) { tags[key] = value })
	if res.Code == 0 {
		out.Row("tag_set", key, value)
	}
	return res, nil
}

func (tp *tagsPlugin) get(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	key := req.Params.Get("key", "")
	var value string
	res := tp.read(ctx, req, out, func(tags map[string]string) { value = tags[key] })
	if res.Code == 0 {
		out.Row("tag", key, value)
	}
	return res, nil
}

func (tp *tagsPlugin) getAll(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	type tag struct{ key, value string }
	var all []tag
	res := tp.read(ctx, req, out, func(tags map[string]string) {
		for k, v := range tags {
			all = append(all, tag{k, v})
		}
	})
	if res.Code != 0 {
		return res, nil
	}
	// Upstream iterates a hash map; sorting by key makes the answer deterministic.
	slices.SortFunc(all, func(a, b tag) int { return strings.Compare(a.key, b.key) })
	for _, t := range all {
		out.Row("tag", t.key, t.value)
	}
	out.Row("count", strconv.Itoa(len(all)))
	return res, nil
}

func (tp *tagsPlugin) delete(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	key := req.Params.Get("key", "")
	var found bool
	res := tp.update(ctx, req, out, func(tags map[string]string) {
		_, found = tags[key]
		delete(tags, key)
	})
	if res.Code == 0 {
		out.Row("tag_deleted", key, strconv.FormatBool(found))
	}
	return res, nil
}

func (tp *tagsPlugin) check(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	key := req.Params.Get("key", "")
	var found bool
	res := tp.read(ctx, req, out, func(tags map[string]string) { _, found = tags[key] })
	if res.Code == 0 {
		out.Row("tag_exists", key, strconv.FormatBool(found))
	}
	return res, nil
}

func (tp *tagsPlugin) clear(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	var n int
	res := tp.update(ctx, req, out, func(tags map[string]string) {
		n = len(tags)
		clear(tags)
	})
	if res.Code == 0 {
		out.Row("tags_cleared", strconv.Itoa(n))
	}
	return res, nil
}

func (tp *tagsPlugin) count(ctx context.Context, req *sdk.Request, out *sdk.Output) (sdk.Result, error) {
	var n int
	res := tp.read(ctx, req, out, func(tags map[string]string) { n = len(tags) })
	if res.Code == 0 {
		out.Row("count", strconv.Itoa(n))
	}
	return res, nil
}
