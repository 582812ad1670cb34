#ifndef PEERMESH_CEDIT_SHIM_H
#define PEERMESH_CEDIT_SHIM_H

// libedit's own interface (histedit.h), not its readline emulation: the emulation cannot redraw on demand
// (rl_redisplay pushes ^R, which it binds to incremental search) nor empty a line (rl_replace_line("") does
// nothing). el_set, el_get and history are variadic, which Swift cannot call, so each use gets a typed wrapper.

#include <histedit.h>
#include <locale.h>

/// C's standard streams, which Swift 6 will not read as globals (they are mutable).
static inline FILE *pm_stdin(void) { return stdin; }
static inline FILE *pm_stdout(void) { return stdout; }
static inline FILE *pm_stderr(void) { return stderr; }

/// A function bound to a key: gets the editor and the key, returns a CC_* code.
typedef unsigned char (*pm_el_command)(EditLine *, int);

static inline int pm_el_set_prompt(EditLine *el, char *(*prompt)(EditLine *)) {
    return el_set(el, EL_PROMPT, prompt);
}
static inline int pm_el_set_editor(EditLine *el, const char *mode) { return el_set(el, EL_EDITOR, mode); }
static inline int pm_el_add_command(EditLine *el, const char *name, const char *help, pm_el_command command) {
    return el_set(el, EL_ADDFN, name, help, command);
}
static inline int pm_el_bind(EditLine *el, const char *keys, const char *command) {
    return el_set(el, EL_BIND, keys, command, (const char *)NULL);
}
/// Replaces libedit's read of one character from its input.
static inline int pm_el_set_reader(EditLine *el, el_rfunc_t reader) { return el_set(el, EL_GETCFN, reader); }
static inline int pm_el_set_unbuffered(EditLine *el, int on) { return el_set(el, EL_UNBUFFERED, on); }
static inline int pm_el_set_client_data(EditLine *el, void *data) { return el_set(el, EL_CLIENTDATA, data); }
static inline void *pm_el_client_data(EditLine *el) {
    void *data = NULL;
    el_get(el, EL_CLIENTDATA, &data);
    return data;
}
static inline int pm_el_set_history(EditLine *el, History *history_) {
    return el_set(el, EL_HIST, history, history_);
}
/// Forgets what libedit believes is on the screen and draws the prompt and line again at the cursor.
static inline int pm_el_redraw(EditLine *el) { return el_set(el, EL_REFRESH); }
/// A terminal capability as libedit's terminal database has it ("up", "ce"), or NULL.
static inline const char *pm_el_capability(EditLine *el, const char *name) {
    char *value = NULL;
    if (el_get(el, EL_GETTC, name, &value, (void *)NULL) != 0) return NULL;
    return value;
}

static inline History *pm_history_new(int size) {
    History *h = history_init();
    HistEvent event;
    if (h == NULL) return NULL;
    history(h, &event, H_SETSIZE, size);
    history(h, &event, H_SETUNIQUE, 1);
    return h;
}
static inline int pm_history_enter(History *h, const char *line) { HistEvent e; return history(h, &e, H_ENTER, line); }
static inline int pm_history_load(History *h, const char *path) { HistEvent e; return history(h, &e, H_LOAD, path); }
static inline int pm_history_save(History *h, const char *path) { HistEvent e; return history(h, &e, H_SAVE, path); }

#endif
