/*
 * qemu_api: our own declarations of the QEMU TCG plugin interface, API
 * version 1, as Debian 12's qemu-user 7.2 exports it.
 *
 * Written from the interface description (notes/emu.md section 8), not
 * copied from qemu-plugin.h: only what the emu plugin uses.  The plugin
 * declares QEMU_API_VERSION and qemu checks it at load; emu_plugin.c checks
 * in turn that qemu's [min, cur] range contains it, so a qemu whose
 * interface changed (API v2 changed qemu_plugin_insn_data) refuses us with
 * a message instead of calling through wrong prototypes.  Every function
 * below is resolved from the qemu-x86_64 executable when it dlopens us.
 */
#ifndef PTKIT_EMU_QEMU_API_H
#define PTKIT_EMU_QEMU_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QEMU_API_VERSION 1
#define QEMU_API_EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;

/* Valid only during qemu_plugin_install. */
typedef struct {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
};

typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id,
    unsigned int vcpu_index);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index,
    void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id,
    struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_syscall_cb_t)(qemu_plugin_id_t id,
    unsigned int vcpu_index, int64_t num, uint64_t a1, uint64_t a2,
    uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
    uint64_t a8);
typedef void (*qemu_plugin_vcpu_syscall_ret_cb_t)(qemu_plugin_id_t id,
    unsigned int vcpu_idx, int64_t num, int64_t ret);

/* Exported by the plugin: its API version and entry point (0 = loaded). */
extern int qemu_plugin_version;
int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
    int argc, char **argv);

void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id,
    qemu_plugin_vcpu_simple_cb_t cb);
void qemu_plugin_register_vcpu_exit_cb(qemu_plugin_id_t id,
    qemu_plugin_vcpu_simple_cb_t cb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
    qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
    qemu_plugin_vcpu_udata_cb_t cb, enum qemu_plugin_cb_flags flags,
    void *userdata);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id,
    qemu_plugin_vcpu_syscall_cb_t cb);
void qemu_plugin_register_vcpu_syscall_ret_cb(qemu_plugin_id_t id,
    qemu_plugin_vcpu_syscall_ret_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
    qemu_plugin_udata_cb_t cb, void *userdata);

/* Valid only inside the translation callback. */
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(
    const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void *qemu_plugin_insn_haddr(const struct qemu_plugin_insn *insn);

void qemu_plugin_outs(const char *string);
/* Crash when called during install in linux-user (image not loaded yet). */
const char *qemu_plugin_path_to_binary(void);

#endif
