// The context ST-Prompt-Template templates run in, rebuilt for narrative-cli's QuickJS sandbox.
// Written for this project from the extension's documented API (docs/reference.md); no code of
// the extension is used. Reads the global __payload (JSON text), leaves JSON text in __done and,
// before each template, how far it got in __progress. Nothing here reaches the host.
(function () {
  'use strict';
  const payload = JSON.parse(__payload);
  const stringify = JSON.stringify;
  const notes = [];
  const note = (text) => { if (!notes.includes(text)) notes.push(text); };

  // ---- determinism: a seeded Math.random and a fixed clock -----------------------------
  let seed = payload.seed >>> 0;
  Math.random = function random() {
    seed = (seed + 0x6D2B79F5) >>> 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const RealDate = Date;
  const now = payload.now;
  function FixedDate(...args) {
    if (!new.target) return new RealDate(now).toString();
    return args.length ? new RealDate(...args) : new RealDate(now);
  }
  FixedDate.prototype = RealDate.prototype;
  FixedDate.now = () => now;
  FixedDate.UTC = RealDate.UTC;
  FixedDate.parse = RealDate.parse;
  globalThis.Date = FixedDate;

  // ---- a lodash subset: what card templates call -----------------------------------------
  const isObjectLike = (v) => v !== null && typeof v === 'object';
  const isPlainObject = (v) => isObjectLike(v) && !Array.isArray(v) &&
    (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null);
  // Paths as lodash reads them: a.b[0], a["b c"], a.[0] (an empty segment before [ is skipped).
  function toPath(path) {
    if (Array.isArray(path)) return path.map(String);
    if (typeof path === 'number' || typeof path === 'symbol') return [String(path)];
    const text = String(path);
    const out = [];
    if (text.charCodeAt(0) === 46) out.push('');
    const re = /[^.[\]]+|\[(?:(-?\d+(?:\.\d+)?)|(["'])((?:(?!\2)[^\\]|\\.)*?)\2)\]|(?=(?:\.|\[\])(?:\.|\[\]|$))/g;
    let m;
    while ((m = re.exec(text)) !== null) {
      if (m[0] === '' && re.lastIndex === m.index) re.lastIndex++;
      let key = m[0];
      if (m[2]) key = m[3].replace(/\\(\\)?/g, '$1');
      else if (m[1] !== undefined) key = m[1];
      out.push(key);
    }
    return out;
  }
  function get(obj, path, fallback) {
    let node = obj;
    for (const key of toPath(path)) {
      if (node === null || node === undefined) return fallback;
      node = node[key];
    }
    return node === undefined ? fallback : node;
  }
  function has(obj, path) {
    let node = obj;
    for (const key of toPath(path)) {
      if (!isObjectLike(node) || !Object.prototype.hasOwnProperty.call(node, key)) return false;
      node = node[key];
    }
    return true;
  }
  function set(obj, path, value) {
    const keys = toPath(path);
    let node = obj;
    keys.forEach((key, i) => {
      if (i === keys.length - 1) { node[key] = value; return; }
      if (!isObjectLike(node[key])) node[key] = /^\d+$/.test(keys[i + 1]) ? [] : {};
      node = node[key];
    });
    return obj;
  }
  function unset(obj, path) {
    const keys = toPath(path);
    const parent = keys.length > 1 ? get(obj, keys.slice(0, -1)) : obj;
    if (!isObjectLike(parent)) return true;
    return delete parent[keys[keys.length - 1]];
  }
  function cloneDeep(v) {
    if (Array.isArray(v)) return v.map(cloneDeep);
    if (isPlainObject(v)) {
      const out = {};
      for (const k of Object.keys(v)) out[k] = cloneDeep(v[k]);
      return out;
    }
    return v;
  }
  function merge(target, ...sources) {
    for (const source of sources) {
      if (!isObjectLike(source)) continue;
      for (const key of Object.keys(source)) {
        const value = source[key];
        if (isObjectLike(value) && isObjectLike(target[key])) merge(target[key], value);
        else if (value !== undefined) target[key] = cloneDeep(value);
      }
    }
    return target;
  }
  function isEqual(a, b) { return stringify(a) === stringify(b); }
  const values = (v) => (isObjectLike(v) ? Object.values(v) : []);
  const iter = (fn) => (typeof fn === 'function' ? fn
    : typeof fn === 'string' ? (v) => get(v, fn)
      : isObjectLike(fn) ? (v) => Object.keys(fn).every((k) => isEqual(get(v, k), fn[k]))
        : (v) => v);
  const list = (c) => (Array.isArray(c) ? c : typeof c === 'string' ? c.split('') : values(c));
  const _ = {
    get, has, set, unset, cloneDeep, merge, isEqual, toPath,
    clone: (v) => (Array.isArray(v) ? v.slice() : isPlainObject(v) ? Object.assign({}, v) : v),
    isArray: Array.isArray, isPlainObject, isObjectLike,
    isObject: (v) => v !== null && (typeof v === 'object' || typeof v === 'function'),
    isString: (v) => typeof v === 'string', isNumber: (v) => typeof v === 'number',
    isBoolean: (v) => typeof v === 'boolean', isFunction: (v) => typeof v === 'function',
    isNil: (v) => v === null || v === undefined, isNull: (v) => v === null,
    isUndefined: (v) => v === undefined, isFinite: Number.isFinite, isInteger: Number.isInteger,
    isNaN: (v) => typeof v === 'number' && v !== v,
    isEmpty: (v) => (v === null || v === undefined ? true
      : typeof v === 'string' || Array.isArray(v) ? v.length === 0
        : isObjectLike(v) ? Object.keys(v).length === 0 : true),
    keys: (v) => (isObjectLike(v) ? Object.keys(v) : []), values,
    entries: (v) => (isObjectLike(v) ? Object.entries(v) : []),
    toPairs: (v) => (isObjectLike(v) ? Object.entries(v) : []),
    fromPairs: (pairs) => Object.fromEntries(pairs || []),
    size: (v) => (typeof v === 'string' || Array.isArray(v) ? v.length
      : isObjectLike(v) ? Object.keys(v).length : 0),
    includes: (c, v) => (typeof c === 'string' ? c.includes(v) : list(c).includes(v)),
    map: (c, fn) => (Array.isArray(c) ? c.map(iter(fn))
      : Object.keys(c || {}).map((k) => iter(fn)(c[k], k, c))),
    filter: (c, fn) => list(c).filter(iter(fn)),
    reject: (c, fn) => list(c).filter((v, i, a) => !iter(fn)(v, i, a)),
    find: (c, fn) => list(c).find(iter(fn)),
    findIndex: (c, fn) => (c || []).findIndex(iter(fn)),
    some: (c, fn) => list(c).some(iter(fn)), every: (c, fn) => list(c).every(iter(fn)),
    forEach: (c, fn) => { if (Array.isArray(c)) c.forEach(fn); else Object.keys(c || {}).forEach((k) => fn(c[k], k, c)); return c; },
    reduce: (c, fn, init) => (Array.isArray(c) ? c.reduce(fn, init)
      : Object.keys(c || {}).reduce((acc, k) => fn(acc, c[k], k, c), init)),
    mapValues: (o, fn) => Object.fromEntries(Object.keys(o || {}).map((k) => [k, iter(fn)(o[k], k, o)])),
    pick: (o, ...ks) => Object.fromEntries(ks.flat().filter((k) => has(o, k)).map((k) => [k, get(o, k)])),
    omit: (o, ...ks) => { const out = Object.assign({}, o); ks.flat().forEach((k) => delete out[k]); return out; },
    assign: Object.assign,
    defaults: (o, ...ss) => { ss.forEach((s) => Object.keys(s || {}).forEach((k) => { if (o[k] === undefined) o[k] = s[k]; })); return o; },
    defaultTo: (v, d) => (v === null || v === undefined || v !== v ? d : v),
    sortBy: (c, ...fns) => { const fs = fns.flat().map(iter); return list(c).slice().sort((a, b) => { for (const f of fs) { const x = f(a), y = f(b); if (x < y) return -1; if (x > y) return 1; } return 0; }); },
    orderBy: (c, fns, orders) => { const fs = [].concat(fns).map(iter); const os = [].concat(orders || []); return list(c).slice().sort((a, b) => { for (let i = 0; i < fs.length; i++) { const x = fs[i](a), y = fs[i](b), d = os[i] === 'desc' ? -1 : 1; if (x < y) return -d; if (x > y) return d; } return 0; }); },
    groupBy: (c, fn) => list(c).reduce((acc, v) => { const k = iter(fn)(v); (acc[k] = acc[k] || []).push(v); return acc; }, {}),
    countBy: (c, fn) => list(c).reduce((acc, v) => { const k = iter(fn)(v); acc[k] = (acc[k] || 0) + 1; return acc; }, {}),
    keyBy: (c, fn) => list(c).reduce((acc, v) => { acc[iter(fn)(v)] = v; return acc; }, {}),
    uniq: (a) => Array.from(new Set(a || [])), compact: (a) => (a || []).filter(Boolean),
    flatten: (a) => (a || []).flat(), flattenDeep: (a) => (a || []).flat(Infinity),
    difference: (a, ...bs) => (a || []).filter((v) => !bs.flat().includes(v)),
    intersection: (a, ...bs) => (a || []).filter((v) => bs.every((b) => (b || []).includes(v))),
    union: (...as) => Array.from(new Set(as.flat())), castArray: (v) => (Array.isArray(v) ? v : [v]),
    first: (a) => (a || [])[0], head: (a) => (a || [])[0], last: (a) => (a || [])[(a || []).length - 1],
    take: (a, n = 1) => (a || []).slice(0, n), takeRight: (a, n = 1) => (n > 0 ? (a || []).slice(-n) : []),
    range: (start, end, step) => { if (end === undefined) { end = start; start = 0; } step = step || (end < start ? -1 : 1); const out = []; for (let i = start; step > 0 ? i < end : i > end; i += step) out.push(i); return out; },
    times: (n, fn) => Array.from({ length: n }, (x, i) => (fn ? fn(i) : i)),
    sum: (a) => (a || []).reduce((s, v) => s + v, 0), sumBy: (a, fn) => (a || []).reduce((s, v) => s + iter(fn)(v), 0),
    mean: (a) => ((a || []).length ? (a || []).reduce((s, v) => s + v, 0) / a.length : NaN),
    max: (a) => ((a || []).length ? Math.max(...a) : undefined), min: (a) => ((a || []).length ? Math.min(...a) : undefined),
    maxBy: (a, fn) => (a || []).reduce((m, v) => (m === undefined || iter(fn)(v) > iter(fn)(m) ? v : m), undefined),
    minBy: (a, fn) => (a || []).reduce((m, v) => (m === undefined || iter(fn)(v) < iter(fn)(m) ? v : m), undefined),
    clamp: (n, lo, hi) => (hi === undefined ? Math.min(n, lo) : Math.min(Math.max(n, lo), hi)),
    inRange: (n, s, e) => { if (e === undefined) { e = s; s = 0; } return n >= Math.min(s, e) && n < Math.max(s, e); },
    round: (n, p = 0) => Math.round(n * 10 ** p) / 10 ** p, floor: (n, p = 0) => Math.floor(n * 10 ** p) / 10 ** p,
    ceil: (n, p = 0) => Math.ceil(n * 10 ** p) / 10 ** p,
    random: (lo = 0, hi = 1, floating = false) => { if (hi < lo) [lo, hi] = [hi, lo]; const r = Math.random() * (hi - lo) + lo; return floating || !Number.isInteger(lo) || !Number.isInteger(hi) ? r : Math.floor(Math.random() * (hi - lo + 1)) + lo; },
    sample: (c) => { const a = list(c); return a[Math.floor(Math.random() * a.length)]; },
    shuffle: (c) => { const a = list(c).slice(); for (let i = a.length - 1; i > 0; i--) { const j = Math.floor(Math.random() * (i + 1)); [a[i], a[j]] = [a[j], a[i]]; } return a; },
    toNumber: Number, toString: (v) => (v === null || v === undefined ? '' : String(v)),
    toInteger: (v) => Math.trunc(Number(v)) || 0,
    trim: (s) => String(s ?? '').trim(), startsWith: (s, t) => String(s ?? '').startsWith(t),
    endsWith: (s, t) => String(s ?? '').endsWith(t), padStart: (s, n, c) => String(s ?? '').padStart(n, c),
    padEnd: (s, n, c) => String(s ?? '').padEnd(n, c), repeat: (s, n) => String(s ?? '').repeat(n),
    split: (s, sep) => String(s ?? '').split(sep), join: (a, sep = ',') => (a || []).join(sep),
    capitalize: (s) => { s = String(s ?? ''); return s.charAt(0).toUpperCase() + s.slice(1).toLowerCase(); },
    upperFirst: (s) => { s = String(s ?? ''); return s.charAt(0).toUpperCase() + s.slice(1); },
    identity: (v) => v, noop: () => undefined,
  };
  _.each = _.forEach;

  // ---- variables: ST-Prompt-Template's scopes over the session's variables ----------------
  const scopes = {
    global: payload.vars.global || {},
    local: payload.vars.local || {},
    message: payload.vars.message || {},
  };
  const MVU_KEYS = ['stat_data', 'display_data', 'delta_data', 'schema'];
  let cache = merge({}, scopes.global, scopes.local, scopes.message);
  const SCOPES = ['global', 'local', 'message', 'cache', 'initial'];
  const FLAGS = ['nx', 'xx', 'n', 'nxs', 'xxs'];
  function options(opts, fallbackScope) {
    if (typeof opts === 'string') {
      if (SCOPES.includes(opts)) return { scope: opts };
      if (FLAGS.includes(opts)) return { flags: opts, scope: fallbackScope };
      return { scope: fallbackScope };
    }
    if (typeof opts === 'boolean') return { dryRun: opts, scope: fallbackScope };
    return Object.assign({ scope: fallbackScope }, opts || {});
  }
  function tree(scope) {
    if (scope === 'cache' || scope === 'initial') return cache;
    return scopes[scope] || cache;
  }
  function getvar(key, opts) {
    const o = options(opts, 'cache');
    const root = tree(o.scope);
    const value = key === null || key === undefined ? root : get(root, key);
    const result = value === undefined ? o.defaults : value;
    return o.clone ? cloneDeep(result) : result;
  }
  // Where a write lands: message variables are the chat's here, except MVU's own trees,
  // which change only through <UpdateVariable> blocks.
  function writable(key, scope) {
    const first = toPath(key)[0];
    if ((scope === 'message' || scope === 'cache') && MVU_KEYS.includes(first)) {
      note(`a template set ${key}: MVU variables change only through <UpdateVariable>; the change lasts for this prompt only`);
      return cache;
    }
    return scope === 'global' ? scopes.global : scopes.local;
  }
  function setvar(key, value, opts) {
    const o = options(opts, 'message');
    if (key === null || key === undefined) {
      note('a template replaced a whole variable tree (setvar(null, …)); that is not kept here');
      return undefined;
    }
    const exists = get(cache, key) !== undefined;
    const flags = o.flags || 'n';
    if ((flags.startsWith('nx') && exists) || (flags.startsWith('xx') && !exists)) return undefined;
    const old = get(cache, key);
    const target = writable(key, o.scope);
    const stored = o.merge && isObjectLike(get(target, key)) ? merge(get(target, key), value) : value;
    set(target, key, stored);
    if (target !== cache) set(cache, key, cloneDeep(stored));
    return o.results === 'old' ? old : o.results === 'fullcache' ? cache : stored;
  }
  function stepvar(sign) {
    return function (key, value = 1, opts) {
      const o = options(opts, 'message');
      const current = getvar(key, { scope: o.inscope || 'cache' });
      let next = Number(current === undefined ? (o.defaults ?? 0) : current) + sign * value;
      if (typeof o.min === 'number') next = Math.max(o.min, next);
      if (typeof o.max === 'number') next = Math.min(o.max, next);
      return setvar(key, next, Object.assign({}, o, { scope: o.outscope || 'message' }));
    };
  }
  function delvar(key, opts) {
    const o = options(opts, 'message');
    const target = writable(key, o.scope);
    unset(target, key);
    if (target !== cache) unset(cache, key);
    return true;
  }
  function insvar(key, value, index, opts) {
    const o = options(opts, 'message');
    const current = cloneDeep(getvar(key, { scope: 'cache' }));
    const arr = Array.isArray(current) ? current : [];
    if (index === undefined || index === null) arr.push(value);
    else arr.splice(Number(index), 0, value);
    return setvar(key, arr, Object.assign({}, o));
  }
  const scoped = (fn, scope) => (k, ...rest) => {
    const last = rest.length ? rest[rest.length - 1] : undefined;
    const o = isPlainObject(last) ? rest.pop() : {};
    return fn(k, ...rest, Object.assign({}, o, { scope, inscope: scope, outscope: scope }));
  };

  // ---- lore: getwi and friends over the story's entries ------------------------------------
  const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
  const lore = payload.lore || [];
  const shared = {};
  let depth = 0;
  function findEntry(book, title) {
    const pool = book ? lore.filter((e) => e.world === book) : lore;
    const hit = (e) => (typeof title === 'number' ? e.uid === title
      : title instanceof RegExp ? title.test(e.comment) : e.comment === title || String(e.uid) === title);
    return pool.find(hit) || lore.find(hit);
  }
  async function getwi(bookOrTitle, titleOrData, data) {
    let book = bookOrTitle, title = titleOrData;
    if (titleOrData === undefined || isPlainObject(titleOrData)) {
      book = ''; title = bookOrTitle; data = titleOrData;
    }
    const entry = findEntry(book, title);
    if (!entry) return '';
    if (!entry.body) return entry.content;
    if (depth >= 10) throw new Error('getwi: entries include each other more than 10 deep');
    depth++;
    try {
      return await render(entry.body, data);
    } finally {
      depth--;
    }
  }
  const entryData = (e) => Object.assign({}, e, { body: undefined });

  // ---- chat messages: the greeting, each finished turn, and this turn's input -------------
  const chat = payload.chat || [];  // [{role, content}], message 0 first
  const byRole = (role) => (role ? chat.filter((m) => m.role === role) : chat);
  function getChatMessage(idx, role) {
    const list = byRole(role);
    const message = list[idx < 0 ? list.length + idx : idx];
    return message ? message.content : '';
  }
  function getChatMessages(a, b, c) {
    let list, start, end;
    if (typeof b === 'number') { list = byRole(c); start = a; end = b; }
    else { list = byRole(b); start = list.length - a; end = list.length; }
    const norm = (i) => (i < 0 ? Math.max(list.length + i, 0) : Math.min(i, list.length));
    return list.slice(norm(start), norm(end)).map((m) => m.content);
  }
  function matchChatMessages(pattern, opts) {
    const o = opts || {};
    const texts = byRole(o.role).map((m) => m.content);
    const one = (p) => texts.some((t) => (p instanceof RegExp ? p.test(t) : t.includes(String(p))));
    if (!Array.isArray(pattern)) return one(pattern);
    return o.and ? pattern.every(one) : pattern.some(one);
  }
  const unavailable = (name, why) => () => {
    throw new Error(`${name}() is not available in narrative-cli (${why})`);
  };

  const locals = {
    _, getvar, setvar, incvar: stepvar(1), decvar: stepvar(-1), delvar, insvar,
    getLocalVar: scoped(getvar, 'local'), getGlobalVar: scoped(getvar, 'global'),
    getMessageVar: scoped(getvar, 'message'), setLocalVar: scoped(setvar, 'local'),
    setGlobalVar: scoped(setvar, 'global'), setMessageVar: scoped(setvar, 'message'),
    incLocalVar: scoped(stepvar(1), 'local'), incGlobalVar: scoped(stepvar(1), 'global'),
    incMessageVar: scoped(stepvar(1), 'message'), decLocalVar: scoped(stepvar(-1), 'local'),
    decGlobalVar: scoped(stepvar(-1), 'global'), decMessageVar: scoped(stepvar(-1), 'message'),
    delLocalVar: scoped(delvar, 'local'), delGlobalVar: scoped(delvar, 'global'),
    delMessageVar: scoped(delvar, 'message'),
    insertLocalVar: scoped(insvar, 'local'), insertGlobalVar: scoped(insvar, 'global'),
    insertMessageVar: scoped(insvar, 'message'),
    allVariables: () => cache,
    getChatMessage, getChatMessages, matchChatMessages,
    getwi, getWorldInfo: getwi,
    getWorldInfoData: async (book) => lore.filter((e) => !book || e.world === book).map(entryData),
    getEnabledWorldInfoEntries: async () => lore.map(entryData),
    define: (name, value, doMerge) => {
      shared[name] = doMerge && isObjectLike(shared[name]) ? merge(shared[name], value) : value;
      locals[name] = shared[name];
    },
    userName: payload.names.user, charName: payload.names.char,
    assistantName: payload.names.char,
    lastUserMessage: payload.last_user || '', lastCharMessage: payload.last_char || '',
    execute: unavailable('execute', 'slash commands run only inside SillyTavern'),
    getchar: unavailable('getchar', 'no character list here'),
    getChara: unavailable('getChara', 'no character list here'),
    getchr: unavailable('getchr', 'no character list here'),
    getCharData: unavailable('getCharData', 'no character list here'),
    getpreset: unavailable('getpreset', 'preset prompts are not readable from templates here'),
    getPresetPrompt: unavailable('getPresetPrompt', 'preset prompts are not readable from templates here'),
    getprp: unavailable('getprp', 'preset prompts are not readable from templates here'),
    getqr: unavailable('getqr', 'no Quick Replies here'),
    getQuickReply: unavailable('getQuickReply', 'no Quick Replies here'),
    activewi: unavailable('activewi', 'lore is activated before templates run'),
    activateWorldInfo: unavailable('activateWorldInfo', 'lore is activated before templates run'),
    evalTemplate: unavailable('evalTemplate', 'templates are compiled before the turn'),
    patchVariables: unavailable('patchVariables', 'MVU variables change through <UpdateVariable>'),
    jsonPatch: unavailable('jsonPatch', 'MVU variables change through <UpdateVariable>'),
    setVariableSchema: unavailable('setVariableSchema', 'MVU keeps the schema here'),
    saveVariables: unavailable('saveVariables', 'variables are saved with each turn'),
    activateRegex: unavailable('activateRegex', 'templates cannot add regex scripts here'),
    injectPrompt: unavailable('injectPrompt', 'no prompt injections here'),
    getPromptsInjected: unavailable('getPromptsInjected', 'no prompt injections here'),
    hasPromptsInjected: unavailable('hasPromptsInjected', 'no prompt injections here'),
    activateWorldInfoByKeywords: unavailable('activateWorldInfoByKeywords', 'lore is activated before templates run'),
    getWorldInfoActivatedData: unavailable('getWorldInfoActivatedData', 'lore is activated before templates run'),
    selectActivatedEntries: unavailable('selectActivatedEntries', 'lore is activated before templates run'),
    refreshWorldInfo: unavailable('refreshWorldInfo', 'lore is activated before templates run'),
    getQuickReplyData: unavailable('getQuickReplyData', 'no Quick Replies here'),
    compileTemplate: unavailable('compileTemplate', 'templates are compiled before the turn'),
    getSyntaxErrorInfo: unavailable('getSyntaxErrorInfo', 'templates are compiled before the turn'),
    parseJSON: unavailable('parseJSON', 'the lenient JSON parser of the extension is not here'),
    getFeatures: unavailable('getFeatures', 'the extension\'s settings do not exist here'),
    setFeatures: unavailable('setFeatures', 'the extension\'s settings do not exist here'),
    resetFeatures: unavailable('resetFeatures', 'the extension\'s settings do not exist here'),
  };
  Object.defineProperty(locals, 'variables', { get: () => cache, enumerable: true });

  async function render(body, data) {
    const fn = new AsyncFunction('locals', body);
    const scope = isPlainObject(data) ? Object.assign(Object.create(locals), data) : locals;
    return String(await fn(scope));
  }

  // ---- the batch: each template in turn; a failure is that template's alone ------------
  const results = [];
  const kept = () => ({ global: scopes.global, local: scopes.local });
  if (payload.check) {  // compile only: which templates are not valid JavaScript
    for (const body of payload.templates) {
      try {
        new AsyncFunction('locals', body);
        results.push({ ok: true, text: '' });
      } catch (error) {
        results.push({ ok: false, kind: 'syntax', detail: String((error && error.message) || error) });
      }
    }
    globalThis.__done = stringify({ results, vars: kept(), notes });
    return;
  }
  (async function main() {
    for (let i = 0; i < payload.templates.length; i++) {
      globalThis.__progress = stringify({ index: i, results, vars: kept(), notes });
      try {
        results.push({ ok: true, text: await render(payload.templates[i]) });
      } catch (error) {
        const syntax = error instanceof SyntaxError;
        const detail = String((error && error.message) || error);
        results.push({ ok: false, kind: syntax ? 'syntax' : 'exception', detail });
      }
    }
    globalThis.__done = stringify({ results, vars: kept(), notes });
  })();
})();
