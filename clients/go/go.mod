module snowflake.dev/client

go 1.19
