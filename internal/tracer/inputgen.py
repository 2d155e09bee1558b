# The harness cwm runs a model-written input generator in (trace func
# --input-model): module-level code of a traced program whose main returns
# __cwm_result. The generator's source is compiled and run apart, so that
# a syntax error, a crash or a missing generate_inputs() is told apart
# from the harness; each argument tuple is kept only if it pickles and
# its repr reads back as the same literal, as a traced call's text must.
def __cwm_run(src, limit, maxlen, budget):
    import ast, base64, itertools, json, pickle

    def done(status, detail="", inputs=(), rejected=None):
        doc = {"status": status, "detail": detail, "inputs": list(inputs), "rejected": rejected or {}}
        return base64.b64encode(json.dumps(doc).encode()).decode()

    def why(e):
        return "%s: %s" % (type(e).__name__, str(e)[:500])

    try:
        code = compile(src, "<generator>", "exec")
    except (SyntaxError, ValueError) as e:
        return done("syntax_error", why(e))
    ns = {"__name__": "__cwm_generator__"}
    try:
        exec(code, ns)
    except BaseException as e:
        return done("crashed", "defining the generator raised " + why(e))
    gen = ns.get("generate_inputs")
    if not callable(gen):
        return done("no_generator", "the code defines no generate_inputs()")
    try:
        out = gen()
        if isinstance(out, (str, bytes, dict)) or not hasattr(out, "__iter__"):
            return done("not_tuples", "generate_inputs() returned %s, not a list of tuples" % type(out).__name__)
        items = list(itertools.islice(out, limit))
    except BaseException as e:
        return done("crashed", "generate_inputs() raised " + why(e))
    texts, rejected, total = [], {}, 0

    def reject(reason):
        rejected[reason] = rejected.get(reason, 0) + 1

    for item in items:
        if not isinstance(item, tuple):
            reject("not_tuple")
            continue
        try:
            pickle.dumps(item)
        except BaseException:
            reject("unpicklable")
            continue
        try:
            text = ", ".join(repr(a) for a in item)
            same = item == () or ast.literal_eval("(" + text + ",)") == item
        except BaseException:
            same = False
        if not same:
            reject("not_literal")
            continue
        cost = len(json.dumps(text))  # what it adds to the result
        if len(text) > maxlen or total + cost > budget:
            reject("too_large")
            continue
        total += cost
        texts.append(text)
    if not texts:
        if not rejected:
            return done("empty", "generate_inputs() returned no tuples")
        worst = max(sorted(rejected), key=rejected.get)
        return done(worst, "no tuple was usable", rejected=rejected)
    return done("ok", "", texts, rejected)


__cwm_result = __cwm_run(__CWM_SRC__, __CWM_LIMIT__, __CWM_MAXLEN__, __CWM_BUDGET__)
