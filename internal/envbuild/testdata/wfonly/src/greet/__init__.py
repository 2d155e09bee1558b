def greet(name, punctuation="!"):
    name = name.strip() or "world"
    return "Hello, " + name + punctuation
