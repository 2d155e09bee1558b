package envserver

import "fmt"

// maxEpisodeIDLen bounds an episode id a client names.
const maxEpisodeIDLen = 255

// checkEpisodeID refuses an episode id a client names (a reset's or a
// clone's episode_id, /ws?episode_id=, a REST path) unless it is a plain
// name: letters, digits, '.', '_' and '-', not "." or "..". Ids travel in
// URL paths, log lines and state files, where a '/', a ".." or a control
// character would mean something else. where says where the id is in
// the request, for the validation error.
func checkEpisodeID(id string, where ...any) error {
	if len(id) > maxEpisodeIDLen {
		return invalid("string_too_long", fmt.Sprintf("String should have at most %d characters", maxEpisodeIDLen), where...)
	}
	if id == "." || id == ".." {
		return invalid("string_pattern_mismatch", fmt.Sprintf("episode id %q is not a name: want [A-Za-z0-9._-], not . or ..", id), where...)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return invalid("string_pattern_mismatch", fmt.Sprintf("episode id %q has %q at byte %d: want only [A-Za-z0-9._-]", id, c, i), where...)
		}
	}
	return nil
}
