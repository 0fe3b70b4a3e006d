from tests.golden import write

write()
