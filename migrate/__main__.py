from migrate.cli import console_main

console_main()
