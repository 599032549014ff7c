"""Reading a view's Result in a test: a table by key, one column of it, the facts as a dict."""


def table(result, key):
    return next(t for t in result.tables if t.key == key)


def column(result, key, name):
    t = table(result, key)
    i = [c.key for c in t.columns].index(name)
    return [row[i] for row in t.rows]


def facts(result):
    return {f.key: f.value for f in result.facts}
