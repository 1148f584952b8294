/* agefence version and the git revision it was built from (generated at configure time). */
#ifndef AF_VERSION_H
#define AF_VERSION_H

extern const char af_version[];
extern const char af_git_revision[];

#endif
