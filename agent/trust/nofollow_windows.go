package trust

// noFollow is 0 on Windows: os.OpenFile has no such flag there, and the plugin dir's
// ACL keeps others from planting a link in it.
const noFollow = 0
